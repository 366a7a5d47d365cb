"""`irscope lines`: what each Python line became, in every stage (the dump's source map)."""

from __future__ import annotations

import click

from irscope import stages
from irscope.cli.options import STAGE_CHOICES, dump_results, recorder, spec_options


@click.command()
@spec_options
@click.option(
    "--line",
    "line_spec",
    metavar="[FILE:]LINE",
    help="One source line in every stage: 33 (the kernel's file) or FILE:LINE (an inlined helper, "
    "e.g. standard.py:43; for a Helion kernel, a line of the Helion file).",
)
@click.option(
    "--stage",
    type=click.Choice([s for s in STAGE_CHOICES if s in stages.MAPPED]),
    help="With --line: only this stage, with the stage file's lines the source line became.",
)
@click.option(
    "--sort",
    "sort",
    default="instructions",
    show_default=True,
    metavar="KEY",
    help="Order of the hot-lines table: instructions, spills, mma, global_load, global_store, "
    "shared_load, shared_store, async_copy, tma, local_load, local_store, barrier, regs, "
    "convert_layouts, line.",
)
@click.option(
    "--top", type=click.IntRange(0), default=0, show_default=True, help="Show the first N lines of the table (0: all)."
)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def lines(request, variants, out_dir, no_cache, debug, line_spec, stage, sort, top, as_json):
    """Per Python line, what it became in each stage: ops, instructions by class, spills, layouts.

    \b
    irscope lines DUMP_DIR                    hot lines, most machine instructions first
    irscope lines DUMP_DIR --sort spills
    irscope lines DUMP_DIR --line 33          line 33 in every stage (FILE:33 for an inlined callee)
    irscope lines DUMP_DIR --line 33 --stage sass --json

    FILE is a kernel file (compiled with the same options as dump) or an earlier dump folder.
    """
    from irscope import artifacts
    from irscope.artifacts import sourcemap
    from irscope.errors import BadInput

    sourcemap.check_sort(sort)
    if line_spec is not None:
        sourcemap.parse_line_spec(line_spec)
    elif stage is not None:
        raise BadInput("--stage: applies with --line (which source line's IR to print)")
    if request.file.is_dir():
        show([(request.file, artifacts.read_manifest(request.file))], line_spec, stage, sort, top, as_json)
        return
    results = dump_results(request, variants, out_dir, no_cache, False, as_json)
    view_flags = {"line": line_spec, "stage": stage, "sort": sort, "top": top, "json": as_json}
    recorder().rendered(
        "lines",
        request,
        out_dir,
        results,
        view_flags,
        lambda rs, out: show([(r.folder, r.manifest) for r in rs], line_spec, stage, sort, top, as_json, out),
        use_cache=not no_cache,
    )


def show(
    folders: list[tuple], line_spec: str | None, stage: str | None, sort: str, top: int, as_json: bool, out=None
) -> int:
    """The hot lines, or one line in every stage, of each (folder, manifest). Also what irscope.entry renders
    on a terminal for a dump the cache's direct mode served. Printed to `out` (a text stream; None: stdout)."""
    from irscope.artifacts import sourcemap
    from irscope.views import lines as view

    for folder, manifest in folders:
        source_map = sourcemap.load(folder, manifest)
        if line_spec is None:
            rows = sourcemap.hot_lines(source_map, sort)
            no_line = sourcemap.no_line_row(source_map)
            if as_json:
                click.echo(view.hot_json(folder, manifest, source_map, sort, rows, no_line), file=out)
            else:
                view.hot_table(manifest, source_map, rows, no_line, top, out=out)
            continue
        sourcemap.check_stage(source_map, stage)
        entry = sourcemap.find_line(source_map, line_spec, sourcemap.origin_lines(manifest.get("generated_by")))
        ir = None
        if stage is not None:
            ir = {stage: sourcemap.stage_lines(folder, source_map, stage, entry["stages"].get(stage, {}).get("at", []))}
        if as_json:
            click.echo(view.line_json(folder, manifest, source_map, entry, ir), file=out)
        else:
            view.line_detail(manifest, source_map, entry, ir, out)
    return 0
