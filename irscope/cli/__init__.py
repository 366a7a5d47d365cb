"""Command line: each command parses its options, calls the jobs and packages, and hands the result
to its view (irscope/views); main() turns errors into one line and an exit status.

One module per command, one command per job (docs/architecture.md's cli/ row lists them). No compiler
logic and no formatting lives here. Imports of irscope's packages stay inside the commands (this is the command
boundary), so `irscope --help` loads neither Triton nor torch.
"""

from __future__ import annotations

import sys

import click

from irscope import errors
from irscope.cli import (
    bench,
    bisect,
    capture,
    diff,
    diff_profiles,
    diff_releases,
    dump,
    envs,
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
from irscope.views import safe


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irscope")
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.",
)
@click.option(
    "--no-pager",
    is_flag=True,
    help="Print long output (--stage, diff) straight to the terminal; else it goes through "
    "$IRSCOPE_PAGER, $PAGER or less -FRX (never when piped).",
)
def cli(color, no_pager):
    """irscope: see and steer what the Triton compiler makes of a kernel."""
    from irscope.views.console import configure

    configure(color=color, pager=not no_pager, locs=False)


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
cli.add_command(envs.envs)
cli.add_command(mcp.mcp)


def main(argv: list[str] | None = None, recorder=None) -> None:
    """The CLI; `recorder` (irscope.direct.Recorder, from irscope.entry) reaches the commands as click's obj."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        cli.main(args=argv, prog_name="irscope", standalone_mode=False, obj=recorder)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.NoArgsIsHelpError as e:  # a bare `irscope` (or `irscope recipes`): its help, exit 0
        click.echo(e.ctx.get_help())
        sys.exit(0)
    except click.exceptions.Abort:
        click.echo("irscope: aborted", err=True)
        sys.exit(1)
    except (click.ClickException, IrscopeError) as e:  # bad input (click's own, or irscope's), a compile failure
        if debug:
            raise
        from_click = isinstance(e, click.ClickException)
        message = e.format_message() if isinstance(e, click.ClickException) else str(e)
        if isinstance(e, click.NoSuchOption) and e.option_name in ("--color", "--no-pager"):
            message = _before_the_command(e)
        click.echo(f"irscope: error: {safe.text(message)}", err=True)
        sys.exit(2 if from_click else e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # an irscope bug: say so in one line, keep the trace behind --debug
        if debug:
            raise
        if isinstance(e, OSError) and e.errno in errors.WRITE_ERRNOS:  # a full disk, a quota, a read-only -o
            click.echo(f"irscope: error: {safe.text(errors.not_written(e))}", err=True)
            sys.exit(1)
        what = (
            f"internal error in its capture hook: {e}"
            if isinstance(e, CaptureHookError)
            else f"internal error: {type(e).__name__}: {e}"
        )
        click.echo(f"irscope: {what} (run again with --debug for the traceback)", err=True)
        sys.exit(1)


def _before_the_command(e: click.NoSuchOption) -> str:
    """--color or --no-pager after a command: where they go, said with the command typed."""
    command = e.ctx.command_path.partition(" ")[2] if e.ctx else "COMMAND"
    value = " never" if e.option_name == "--color" else ""
    return f"{e.option_name} is an option of irscope itself, given before the command: irscope {e.option_name}{value} {command} ..."


if __name__ == "__main__":
    main()
