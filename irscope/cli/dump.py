"""`irscope dump`: compile a kernel (a kernel file or a spec file) and lay out every stage."""

from __future__ import annotations

from pathlib import Path

import click

from irscope.cli.capture import capture_flags, run_capture, write_report
from irscope.cli.options import LOCS_OPTION, STAGE_CHOICES, recorder, spec_options
from irscope.errors import BadInput


@click.command(context_settings={"allow_extra_args": True})  # ARGS after --: the old spelling of capture
@spec_options
@click.option("--stage", type=click.Choice(STAGE_CHOICES), help="Print this stage to stdout instead of the summary.")
@LOCS_OPTION
@click.option("--passes", "with_passes", is_flag=True, help="Also record the IR after every MLIR pass.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead of the summary.")
@click.option(
    "--lines",
    "with_lines",
    is_flag=True,
    help="Under the summary, the hot lines: what each Python line became (irscope lines DIR for more).",
)
@click.option(
    "--html",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="After dumping, write the dumps' HTML report to FILE (as irscope report).",
)
@capture_flags(hidden=True)
@click.pass_context
def dump(
    ctx, request, variants, out_dir, no_cache, debug, stage, with_passes, as_json, with_lines, html, **capture_only
):
    """Compile a kernel and lay out every stage, its resources and instruction mix.

    \b
    FILE is a kernel file (with --signature/--arg/--const) or a spec file (a
    capture's OUT/captures/KERNEL-N.json, or a dump's manifest.json). To run a
    script and dump every kernel it compiles: irscope capture SCRIPT [-- ARGS].
    """
    from irscope import jobs
    from irscope.compile import dump as dump_job
    from irscope.kernel import inputs
    from irscope.views import dump as view
    from irscope.views.progress import reporter

    if not request.has_specialization and not request.is_spec_file:
        return _old_capture(
            request,
            variants,
            tuple(ctx.args),
            out_dir,
            no_cache,
            debug,
            stage,
            with_passes,
            as_json,
            with_lines,
            html,
            capture_only,
        )
    inputs.check_dump_flags(stage, as_json, out_dir, with_lines)
    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")
    inputs.check_capture_only(
        ctx.args,
        capture_only["script_log"],
        capture_only["compile_only"],
        capture_only["n_jobs"],
        capture_only["time_limit"],
        capture_only["no_sass"],
    )
    todo, progress = jobs.variants(request, variants), reporter(enabled=not as_json)
    results = dump_job.dump_jobs(todo, out_dir, with_passes, not no_cache, stage, progress)
    if stage:
        view.print_stage(results, stage)
    elif as_json:
        click.echo(view.as_json(results))
    else:
        view.summary(results)
        if with_lines:
            _hot_lines(results)
    if stage or as_json:  # the summary shows pin checks; other views get the warnings on stderr
        view.warn_pins_without_effect(results)
    if html is not None:
        write_report([r.folder for r in results], html, quiet=bool(stage or as_json))
    if not (stage or with_lines or html is not None):
        recorder().remember_dump(request, out_dir, results, as_json, use_cache=not no_cache)


def _old_capture(
    request,
    variants,
    script_args,
    out_dir,
    no_cache,
    debug,
    stage,
    with_passes,
    as_json,
    with_lines,
    html,
    capture_only,
) -> None:
    """`irscope dump SCRIPT [-- ARGS]` (no --signature/--arg/--const): exactly what capture does (its flags
    are dump's hidden ones; --lines, dump's own, is refused), then one line naming `irscope capture`. Not on
    bad input (one line): a kernel file given no specialization runs, launches nothing, and says to give one."""
    from irscope.views import capture as capture_view

    if with_lines:
        raise BadInput(
            "--lines: shows one kernel's hot lines under its summary; for a captured script run "
            "irscope lines on each dump folder it lists"
        )
    run_capture(
        request,
        variants,
        script_args,
        out_dir,
        no_cache,
        debug,
        stage,
        with_passes,
        as_json,
        html=html,
        last_word=capture_view.print_old_spelling,
        **capture_only,
    )


def _hot_lines(results) -> None:
    """The hot-lines table of each dump, under its summary (the source map's top 15 lines)."""
    from irscope.artifacts import sourcemap
    from irscope.views import lines as lines_view

    for r in results:
        source_map = sourcemap.load(r.folder, r.manifest)
        lines_view.hot_table(
            r.manifest,
            source_map,
            sourcemap.hot_lines(source_map),
            sourcemap.no_line_row(source_map),
            top=15,
            indent="  ",
        )
