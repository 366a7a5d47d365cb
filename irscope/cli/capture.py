"""`irscope capture SCRIPT [-- ARGS]`: run a script unmodified and dump every kernel it compiles.

Parsing and rendering only: the checks and the run are capture/command.py's, the output views/capture.py's.
`irscope dump SCRIPT` (the old spelling, for one more release) comes here through run_capture.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from irscope.cli.options import LOCS_OPTION, STAGE_CHOICES, script_options


def capture_flags(hidden: bool):
    """The flags only a capture has; `hidden` for dump, which takes them for its old spelling only."""
    decorators = [
        click.option(
            "--script-log",
            type=click.Path(dir_okay=False),
            metavar="FILE",
            hidden=hidden,
            help="Send the script's own output (stdout and stderr) to FILE.",
        ),
        click.option(
            "--compile-only",
            is_flag=True,
            hidden=hidden,
            help="Do not run kernels even on the local GPU; record launches and compile only.",
        ),
        click.option(
            "--time-limit",
            type=click.FloatRange(min=0, min_open=True),
            metavar="SECONDS",
            hidden=hidden,
            help="End the script after SECONDS; what it captured so far is written and dumped (as after "
            "Ctrl-C or SIGTERM: one line says why, exit 0 when a kernel was dumped).",
        ),
        click.option(
            "--jobs",
            "n_jobs",
            type=click.IntRange(min=1, max=1024),
            metavar="N",
            hidden=hidden,
            help="Dump the captured kernels in N worker processes (default: the machine's cores; "
            "1: one after another in this process).",
        ),
        click.option(
            "--no-sass",
            is_flag=True,
            hidden=hidden,
            help="Do not disassemble the cubins (nvdisasm costs about 0.4 s a kernel, whatever its size): "
            "every stage up to the cubin, the resources and the PTX mix are dumped; replaying a capture's "
            "spec file (irscope dump OUT/captures/KERNEL-N.json) makes that kernel's SASS.",
        ),
    ]

    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


@click.command()
@script_options
@click.option("--stage", type=click.Choice(STAGE_CHOICES), help="Print this stage of each dump instead of the summary.")
@LOCS_OPTION
@click.option("--passes", "with_passes", is_flag=True, help="Also record the IR after every MLIR pass.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead of the summary.")
@capture_flags(hidden=False)
@click.option(
    "--html",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="After dumping, write the dumps' HTML report to FILE (as irscope report).",
)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS]")
def capture(request, variants, script_args, **flags):
    """Run a Python script unmodified and dump every Triton kernel it compiles.

    \b
    The script runs as __main__, with ARGS after --; --kernel filters the
    kernels by name (glob). Without a GPU, or for another --target, kernels are
    compiled for the target and launches recorded, not run. Each capture is also
    written as a spec file (OUT/captures/KERNEL-N.json) that irscope dump replays.
    """
    run_capture(request, variants, tuple(script_args), **flags)


def run_capture(
    request,
    variants,
    script_args: tuple,
    out_dir,
    no_cache,
    debug,
    stage,
    with_passes,
    as_json,
    script_log,
    compile_only,
    time_limit,
    n_jobs,
    html,
    no_sass=False,
    last_word=None,
) -> None:
    """The capture, checked, run, rendered (and its --html report); exits with its status. `last_word()`
    (dump's old spelling: its note) is said once the capture has run, after its output: bad input stays one line."""
    from irscope.capture import command
    from irscope.report.output import check_output  # light: no jinja2 until a report is written
    from irscope.views import capture as view
    from irscope.views.progress import reporter

    if html is not None:
        check_output(html, "--html")
    opts, unused = command.check_flags(
        request,
        variants,
        command.CaptureOptions(
            out_dir=out_dir,
            use_cache=not no_cache,
            with_passes=with_passes,
            with_sass=not no_sass,
            quiet=bool(stage or as_json),
            stage=stage,
            script_log=script_log,
            compile_only=compile_only,
            time_limit=time_limit,
            jobs=n_jobs,
            as_json=as_json,
            debug=debug,
            html=html,
        ),
        as_json,
    )
    if unused is not None:
        view.print_warning(unused)
    with command.signals_kept() as stop:  # a signal after the script stops the dumps, said and written
        run = command.run(request, list(script_args), opts, stop, reporter(enabled=not opts.quiet))
        view.render(run, stage, as_json, debug)
        folders = [r.folder for r in command.results(run)]
        if html is not None and folders and run.dumps_stopped is None:
            write_report(folders, html, quiet=opts.quiet)
        code = command.exit_status(run, request.file)
    if last_word is not None:
        last_word()
    if code:
        sys.exit(code)


def write_report(folders, html: Path, quiet: bool) -> None:
    """--html: the report of the dump folders, written whole; its line on stderr when stdout is data."""
    from irscope.views import report as report_view

    click.echo(report_view.write_dumps(folders, html, flag="--html"), err=quiet)
