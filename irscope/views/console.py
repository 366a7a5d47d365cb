"""What every view shares: the rich console irscope prints to, and the small formatters of sizes.

One place decides how output looks when piped (whole lines, 200 columns, grep-able) and on a
terminal (its own width), so every command's view prints the same way.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from irscope.views import safe

if TYPE_CHECKING:
    from rich.console import Console


def console(stderr: bool = False, file=None) -> Console:
    """A rich Console on stdout (or stderr, or `file`): the terminal's width, or 200 columns when piped."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    # piped output keeps whole lines (grep-able); a terminal gets its own width
    width = None if stream.isatty() else 200
    # emoji off: IR, SASS and source text may hold ":name:" runs that rich would turn into emoji
    return safe.console_class()(stderr=stderr, file=file, highlight=False, emoji=False, width=width)


def fmt_bytes(n: int) -> str:
    """A size in bytes as a person reads it: '512 B', '6.8 KiB'."""
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def widths(d: dict[str, int], unit: str = "b") -> str:
    """Access widths and their counts ({128: 4, 32: 2}) as '4x128b, 2x32b' ('none' when empty)."""
    return ", ".join(f"{n}x{w}{unit}" for w, n in d.items()) or "none"


def esc(text: object) -> str:
    """Rich markup escaped: a source like 'recipe h100 [variant x]' is text, not a style tag."""
    from rich.markup import escape

    return escape(safe.text(text))
