"""`irscope passes`: the IR after every MLIR pass."""

from __future__ import annotations

import sys

import click

from irscope.cli.options import dump_results, recorder, spec_options


@click.command()
@spec_options
@click.option("--first", "pattern", metavar="REGEX", help="Name the pass that first produced IR matching REGEX.")
@click.option("--all", "show_all", is_flag=True, help="List every pass, not only those that changed the IR.")
@click.option(
    "--line",
    "line_spec",
    metavar="[FILE:]LINE",
    help="How this Python line's ops changed pass by pass (33, or FILE:LINE for an inlined helper).",
)
def passes(request, variants, out_dir, no_cache, debug, pattern, show_all, line_spec):
    """The IR after every MLIR pass: which passes changed it, and which first produced a pattern.

    FILE is a kernel file (compiled with the same options as dump) or an earlier
    `irscope dump --passes` folder.
    """
    from irscope.artifacts import passes as passes_mod

    if pattern is not None:
        passes_mod.check_pattern(pattern)
    if line_spec is not None:
        from irscope.artifacts import sourcemap

        sourcemap.parse_line_spec(line_spec)
    if request.file.is_dir():
        status = show([(request.file, passes_mod.read_folder(request.file))], pattern, show_all, line_spec)
    else:
        results = dump_results(request, variants, out_dir, no_cache, True)
        view_flags = {"first": pattern, "all": show_all, "line": line_spec}
        status = recorder().rendered(
            "passes",
            request,
            out_dir,
            results,
            view_flags,
            lambda rs, out: show([(r.folder, r.manifest) for r in rs], pattern, show_all, line_spec, out),
            use_cache=not no_cache,
        )
    if status:
        sys.exit(status)


def show(folders: list[tuple], pattern: str | None, show_all: bool, line_spec: str | None, out=None) -> int:
    """The passes of each (folder, manifest); the exit status (1: --first's pattern found nowhere). Also
    what irscope.entry renders on a terminal for a dump the cache's direct mode served. Printed to `out`
    (a text stream; None: stdout)."""
    from irscope.artifacts import passes as passes_mod
    from irscope.artifacts import sourcemap
    from irscope.compare import passcounts
    from irscope.views import passes as view

    for folder, manifest in folders:
        records, afters, first_ir = passes_mod.load(folder, manifest)
        records = passcounts.aligned(records, afters, first_ir)  # +/- lines as the aligned diff counts them
        history = None
        if line_spec is not None:  # before any output: a line with no ops is one line on stderr
            history = passes_mod.line_history(
                line_spec, sourcemap.kernel_file(folder, manifest), records, afters, first_ir
            )
        view.header(folder, manifest, records, out)
        if history is not None and line_spec is not None:  # a history only for a --line
            view.line_history(line_spec, history, out)
            if pattern is None:
                continue
        if pattern is None:
            view.table(records, show_all, out)
            continue
        hit = passes_mod.first_producer(pattern, records, afters, first_ir, passes_mod.stage_texts(folder, manifest))
        view.first_match(pattern, hit, folder, out)
        if hit.where == "none":
            return 1
    return 0
