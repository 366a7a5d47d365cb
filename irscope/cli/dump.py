"""`irscope dump`: compile a kernel (or capture a script's kernels) and lay out every stage."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from irscope.cli.options import STAGE_CHOICES, spec_options
from irscope.errors import BadInput


@click.command()
@spec_options
@click.option("--stage", type=click.Choice(STAGE_CHOICES), help="Print this stage to stdout instead of the summary.")
@click.option("--passes", "with_passes", is_flag=True, help="Also record the IR after every MLIR pass.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead of the summary.")
@click.option("--lines", "with_lines", is_flag=True,
              help="Under the summary, the hot lines: what each Python line became (irscope lines DIR for more).")
@click.option("--script-log", type=click.Path(dir_okay=False), metavar="FILE",
              help="Capture: send the script's own output (stdout and stderr) to FILE.")
@click.option("--compile-only", is_flag=True,
              help="Capture: do not run kernels even on the local GPU; record launches and compile only.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Capture: end the script after SECONDS; what it captured so far is written and dumped "
                   "(as after Ctrl-C or SIGTERM: one line says why, exit 0 when a kernel was dumped).")
@click.option("--jobs", "n_jobs", type=click.IntRange(min=1, max=1024), metavar="N",
              help="Capture: dump the captured kernels in N worker processes (default: the machine's cores; "
                   "1: one after another in this process).")
@click.option("--html", type=click.Path(path_type=Path), metavar="FILE",
              help="After dumping, write the dumps' HTML report to FILE (as irscope report).")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS]")
def dump(request, variants, out_dir, no_cache, debug, stage, with_passes, as_json, with_lines, script_log,  # noqa: C901
         compile_only, time_limit, n_jobs, html, script_args):
    """Compile a kernel and lay out every stage, its resources and instruction mix.

    \b
    With no --signature/--arg/--const, FILE is a script: it runs (as __main__, with
    ARGS after --) and every kernel it compiles is captured and dumped; --kernel
    filters by name (glob). Without a GPU, or for another --target, kernels are
    compiled for the target and launches recorded, not run.
    """
    from irscope.compile import dump as dump_job
    from irscope.kernel import inputs
    from irscope.views import dump as view

    inputs.check_dump_flags(stage, as_json, out_dir)
    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")
    if with_lines and (stage or as_json):
        raise BadInput("--lines: shows the hot lines under the summary; with --stage or --json use "
                       "irscope lines DIR [--json]")
    if not request.has_specialization and not request.is_spec_file:
        from irscope.capture import command as capture
        from irscope.views import capture as capture_view

        if with_lines:
            raise BadInput("--lines: shows one kernel's hot lines under its summary; for a captured script run "
                           "irscope lines on each dump folder it lists")
        script_log = inputs.check_log_file(script_log)
        if (unused := capture.not_applied(request, variants, out_dir)) is not None:
            capture_view.print_warning(unused)
        with capture.signals_kept() as stop:   # a signal after the script stops the dumps, said and written
            run = capture.run(request, list(script_args), capture.CaptureOptions(
                out_dir, not no_cache, with_passes, bool(stage or as_json), stage, script_log, compile_only,
                time_limit, jobs=n_jobs), stop)
            capture_view.render(run, stage, as_json, debug)
            folders = [c.result.folder for c in run.captures if c.result is not None]
            if html is not None and folders and run.dumps_stopped is None:
                _write_report(folders, html, quiet=bool(stage or as_json))
            code = capture.exit_status(run, request.file)
        if code:
            sys.exit(code)
        return
    inputs.check_capture_only(script_args, script_log, compile_only)
    if n_jobs is not None:
        raise BadInput("--jobs: applies to a captured script's dumps (irscope dump SCRIPT), not to one kernel's")
    if time_limit is not None:
        raise BadInput("--time-limit: applies when FILE is a script run for capture (no --signature/--arg/--const)")
    from irscope import jobs

    results = dump_job.dump_jobs(jobs.variants(request, variants), out_dir, with_passes, not no_cache, stage)
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
        _write_report([r.folder for r in results], html, quiet=bool(stage or as_json))
    if not (stage or with_lines or html is not None):
        _remember(request, variants, out_dir, as_json, with_passes, results)


def _remember(request, variants, out_dir: Path, as_json: bool, with_passes: bool, results) -> None:
    """Leave the record that lets the same request be served without Triton next time (compile/direct.py);
    the summary is rendered here from the folders, as a repeat prints it to a pipe (--json is rendered
    then, as it names how the dump was served)."""
    from irscope.cli.options import recording
    from irscope.compile import direct

    where = recording(request, results)
    if where is None:
        return
    on_disk = direct.on_disk(results)
    summary = None
    if not as_json:
        import io

        from irscope.views import dump as view
        from irscope.views.console import console

        buf = io.StringIO()
        view.summary(on_disk, out=console(file=buf))
        summary = buf.getvalue()
    fields = direct.fields_of("dump", request, variants, out_dir, with_passes, {"json": as_json})
    direct.remember_request(fields, *where, on_disk, summary)


def _write_report(folders, html: Path, quiet: bool) -> None:
    """--html: the report of the dump folders, written whole; its line on stderr when stdout is data."""
    from irscope.views import report as report_view

    click.echo(report_view.write_dumps(folders, html, flag="--html"), err=quiet)


def _hot_lines(results) -> None:
    """The hot-lines table of each dump, under its summary (the source map's top 15 lines)."""
    from irscope.artifacts import sourcemap
    from irscope.views import lines as lines_view

    for r in results:
        source_map = sourcemap.load(r.folder, r.manifest)
        lines_view.hot_table(r.manifest, source_map, sourcemap.hot_lines(source_map),
                             sourcemap.no_line_row(source_map), top=15, indent="  ")
