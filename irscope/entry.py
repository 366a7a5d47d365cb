"""The `irscope` command (and `python -m irscope`): a repeat the cache's direct mode can serve is answered
from its record (irscope/direct: no click, no Triton, no kernel file loaded); everything else goes to the
click CLI (irscope/cli), handed the Recorder that lets this command line be served next time, in a child
process this one supervises (compile/status.py): a compiler's abort or a captured script's crash ends the
child, and this process says so (`ended`), keeping and dumping what the script captured."""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, TextIO

from irscope import direct
from irscope.errors import BadInput

if TYPE_CHECKING:
    from irscope.compile.status import Report

QUIET = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE}  # ends a process on purpose: said by no one


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    recorder = direct.Recorder(args)  # the import path and environment as the process started
    status = direct.serve(recorder, sys.stdout, terminal=_terminal)
    if status is None:
        from irscope.compile import status as channel  # the supervisor: only when the CLI runs

        channel.fork(ended)  # from here on, the child (the parent exits from fork with ended's status)
        from irscope.cli import (
            main as cli_main,  # click and every command: only when not served here
        )

        cli_main(args, recorder=recorder)
    elif status:
        sys.exit(status)


def ended(wait_status: int, report: Report) -> int:
    """The supervisor's exit status once the command's process is gone (`report`: compile/status.Report, what
    it told): its own status when it exited; when a signal ended it, in a compile one line and 1, in a captured
    script its captures dumped and shown (the capture's status), elsewhere one line (none for SIGINT, SIGTERM,
    SIGHUP, SIGPIPE) and 128 + the signal's number."""
    from irscope.compile import status as channel

    code = os.waitstatus_to_exitcode(wait_status)
    if code >= 0:
        return code
    name = channel.signal_name(-code)
    if sys.stderr.isatty():  # a progress bar the process was drawing: its line cleared, the cursor shown again
        sys.stderr.write("\r\x1b[2K\x1b[?25h")
    compiling, script = channel.where(report.records)
    if compiling is not None:
        words = channel.last_words(report.stderr_tail(compiling.get("stderr")))
        _say(
            f"irscope: error: the compile of {compiling.get('kernel')} for {compiling.get('target')} aborted in "
            f"stage '{compiling.get('stage')}' ({name})" + (f": {words}" if words else "")
        )
        return 1
    if script is not None:
        return _salvaged(report, name)
    if -code not in QUIET:
        _say(f"irscope: error: irscope's process ended by {name} (in neither a compile nor a captured script)")
    return 128 - code


def _salvaged(report: Report, name: str) -> int:
    """The captured script ended the process: its captures written, dumped and shown as a capture's are."""
    from irscope.capture import command, salvage
    from irscope.views import capture as view

    try:
        run, header = salvage.recover(report, name)
        opts = header.options
        view.render(run, opts.stage, opts.as_json, opts.debug)
        folders = [r.folder for r in command.results(run)]
        if opts.html is not None and folders:
            from irscope import cli

            cli.capture.write_report(folders, opts.html, quiet=opts.quiet)
        return command.exit_status(run, run.script)
    except BadInput as e:
        _say(f"irscope: error: {e}")
        return e.exit_code


def _say(line: str) -> None:
    from irscope.views import safe

    sys.stderr.write(safe.text(line) + "\n")
    sys.stderr.flush()


def _terminal(command: str, folders: list[tuple], view: dict, out: TextIO) -> int:
    """passes and lines on a terminal: the command's own rendering of the folders served."""
    from irscope import cli

    if command == "passes":
        return cli.passes.show(folders, view["first"], view["all"], view["line"], out=out)
    return cli.lines.show(folders, view["line"], view["stage"], view["sort"], view["top"], view["json"], out=out)
