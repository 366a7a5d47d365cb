"""The `irscope` command (and `python -m irscope`): a repeat the cache's direct mode can serve is answered
from its record (irscope/direct: no click, no Triton, no kernel file loaded); everything else goes to the
click CLI (irscope/cli), handed the Recorder that lets this command line be served next time."""

from __future__ import annotations

import sys
from typing import TextIO

from irscope import direct


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    recorder = direct.Recorder(args)  # the import path and environment as the process started
    status = direct.serve(recorder, sys.stdout, terminal=_terminal)
    if status is None:
        from irscope.cli import (
            main as cli_main,  # click and every command: only when not served here
        )

        cli_main(args, recorder=recorder)
    elif status:
        sys.exit(status)


def _terminal(command: str, folders: list[tuple], view: dict, out: TextIO) -> int:
    """passes and lines on a terminal: the command's own rendering of the folders served."""
    from irscope import cli

    if command == "passes":
        return cli.passes.show(folders, view["first"], view["all"], view["line"], out=out)
    return cli.lines.show(folders, view["line"], view["stage"], view["sort"], view["top"], view["json"], out=out)
