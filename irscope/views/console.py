"""What every view shares: the rich console irscope prints to, whether output is coloured, the pager,
and the small formatters of sizes.

One place decides how output looks when piped (whole lines, 200 columns, grep-able, no colour) and on
a terminal (its own width, coloured), so every command's view prints the same way. The display
settings are the command line's (`irscope --color auto|always|never`, `--no-pager`, a command's
`--locs`), set once per command by irscope/cli through `configure`; NO_COLOR (no-color.org) turns
colour off where --color is auto.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from irscope import knobs
from irscope.views import safe

if TYPE_CHECKING:
    from rich.console import Console

COLOR_MODES = ("auto", "always", "never")
DEFAULT_PAGER = "less"  # run with LESS=FRX unless LESS is set, as git does: quits when it fits one screen


@dataclass
class Display:
    """How this command displays: --color, whether a pager may be used, whether --stage keeps loc(...)."""

    color: str = "auto"
    pager: bool = True
    locs: bool = False


DISPLAY = Display()


def configure(**changes: object) -> None:
    """Set display settings by name (the CLI's options): configure(color="never", pager=False)."""
    for name, value in changes.items():
        if name == "color" and value not in COLOR_MODES:
            raise ValueError(f"color {value!r}: one of {', '.join(COLOR_MODES)}")
        setattr(DISPLAY, name, value)


def colour(stream: IO | None = None) -> bool:
    """Whether output to `stream` (stdout) is coloured: --color always/never, else (auto) when it is a
    terminal (or the pager irscope started) and NO_COLOR is unset or empty."""
    if DISPLAY.color != "auto":
        return DISPLAY.color == "always"
    stream = sys.stdout if stream is None else stream
    return stream.isatty() and not os.environ.get("NO_COLOR")


def console(stderr: bool = False, file=None) -> Console:
    """A rich Console on stdout (or stderr, or `file`): the terminal's width, or 200 columns when piped;
    coloured as `colour` says."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    # piped output keeps whole lines (grep-able); a terminal gets its own width
    width = None if stream.isatty() else 200
    coloured = colour(stream)
    # emoji off: IR, SASS and source text may hold ":name:" runs that rich would turn into emoji
    return safe.console_class()(
        stderr=stderr,
        file=file,
        highlight=False,
        emoji=False,
        width=width,
        color_system="auto" if coloured else None,
        force_terminal=True if DISPLAY.color == "always" else None,
        no_color=False if coloured else None,
    )


def pager_command() -> str | None:
    """The pager for long output on a terminal: $IRSCOPE_PAGER, else $PAGER, else less where installed;
    None where --no-pager was given, stdout is not a terminal, or the pager is set to '' or 'cat' (as git)."""
    if not (DISPLAY.pager and sys.stdout.isatty()):
        return None
    command = knobs.PAGER.get()
    if command is None:
        command = os.environ.get("PAGER")
    if command is None:  # the default only where it is installed: else the output would go nowhere
        return DEFAULT_PAGER if shutil.which(DEFAULT_PAGER) else None
    return None if command.strip() in ("", "cat") else command


class _ToPager(io.TextIOWrapper):
    """The pager's standard input, which stands for the terminal: the views colour and size output for it."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def paged(out: IO | None = None) -> Iterator[IO | None]:
    """Long output through the pager (`pager_command`) when it goes to stdout (`out` None or sys.stdout) and
    there is one: run through the shell as git runs it, LESS=FRX unless LESS is set. Yields where to write:
    `out` as it is, or the pager's input, which sys.stdout is too within the block. A pager quit early (q)
    ends the output quietly."""
    command = pager_command() if out is None or out is sys.stdout else None
    if command is None:
        yield out
        return
    sys.stdout.flush()
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        yield out  # the pager cannot start: the output goes to the terminal as it would without one
        return
    assert proc.stdin is not None
    stream, saved = _ToPager(proc.stdin, encoding="utf-8", errors="replace"), sys.stdout
    sys.stdout = stream
    try:
        yield stream
    except BrokenPipeError:
        pass  # the reader quit before the end
    finally:
        sys.stdout = saved
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            stream.close()
        proc.wait()


def fmt_bytes(n: int) -> str:
    """A size in bytes as a person reads it: '512 B', '6.8 KiB'."""
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def fmt_share(x: float) -> str:
    """A fraction as the terminal prints it: 0.125 -> '12%' (occupancy and other shares)."""
    return f"{x * 100:.0f}%"


def plural(n: int, word: str, many: str = "") -> str:
    """'1 block', '2 blocks' ('1 copy', '3 copies' with `many`)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def widths(d: dict[str, int], unit: str = "b") -> str:
    """Access widths and their counts ({128: 4, 32: 2}) as '4x128b, 2x32b' ('none' when empty)."""
    return ", ".join(f"{n}x{w}{unit}" for w, n in d.items()) or "none"


def esc(text: object) -> str:
    """Rich markup escaped: a source like 'recipe h100 [variant x]' is text, not a style tag."""
    from rich.markup import escape

    return escape(safe.text(text))
