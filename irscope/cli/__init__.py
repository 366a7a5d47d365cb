"""Command line: each command parses its options, calls the jobs and packages, and hands the result
to its view (irscope/views); main() turns errors into one line and an exit status.

One module per command, one command per job (docs/architecture.md's cli/ row lists them). No compiler
logic and no formatting lives here. Imports of irscope's packages stay inside the commands (this is the command
boundary), so `irscope --help` loads neither Triton nor torch.
"""

from __future__ import annotations

import sys

import click

from irscope.cli import (
    bench,
    bisect,
    capture,
    diff,
    diff_profiles,
    diff_releases,
    dump,
    explain,
    frontier,
    lines,
    mcp,
    passes,
    profile,
    recipes,
    report,
    signature,
    sweep,
)
from irscope.errors import CaptureHookError, IrscopeError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irscope")
def cli():
    """irscope: see and steer what the Triton compiler makes of a kernel."""


for _command in (
    dump.dump,
    lines.lines,
    explain.explain,
    report.report,
    passes.passes,
    signature.signature,
    diff.diff,
    bench.bench,
    sweep.sweep,
    recipes.recipes_group,
    bisect.bisect,
    profile.profile,
):
    cli.add_command(_command)
for _command in (capture.capture, diff_releases.diff_releases, frontier.frontier, diff_profiles.diff_profiles):
    cli.add_command(_command)
cli.add_command(mcp.mcp)


def main(argv: list[str] | None = None, recorder=None) -> None:
    """The CLI; `recorder` (irscope.direct.Recorder, from irscope.entry) reaches the commands as click's obj."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        cli.main(args=argv, prog_name="irscope", standalone_mode=False, obj=recorder)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("irscope: aborted", err=True)
        sys.exit(1)
    except (click.ClickException, IrscopeError) as e:  # bad input (click's own, or irscope's), a compile failure
        if debug:
            raise
        from_click = isinstance(e, click.ClickException)
        message = e.format_message() if isinstance(e, click.ClickException) else str(e)
        click.echo(f"irscope: error: {message}", err=True)
        sys.exit(2 if from_click else e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # an irscope bug: say so in one line, keep the trace behind --debug
        if debug:
            raise
        what = (
            f"internal error in its capture hook: {e}"
            if isinstance(e, CaptureHookError)
            else f"internal error: {type(e).__name__}: {e}"
        )
        click.echo(f"irscope: {what} (run again with --debug for the traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
