"""Text from data reaches a terminal as text: the one escaping of control characters.

Kernel names, spec strings, notes, IR lines, stall names and a record's summary are data (a dump folder,
a spec file, the cache, a profile.json may come from anyone). A control character in them (ESC starting
a sequence that sets the window title or clears the screen, a carriage return that overwrites the line,
a bidi override) would be acted on by the terminal. `text` writes each one as a visible escape
(`\\x1b`, `\\u202e`); a newline and a tab stay as they are. `SafeConsole` applies it to every string rich turns into
text (before it is measured, so a table lays out the escaped text) and to every segment it prints that
is not rich's own control output (its styles are added after, so colours still work), and
views.console.console() makes one; the lines a view writes without rich go through `text` at the call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

# C0 but newline and tab, DEL, C1, and the Unicode format characters that reorder or hide text
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: object) -> str:
    """str(value) with every control character but newline and tab written as a visible escape."""
    s = str(value)
    return _CONTROL.sub(_escaped, s) if _CONTROL.search(s) else s


def is_clean(value: str) -> bool:
    """Whether `value` holds no character that `text` would escape."""
    return _CONTROL.search(value) is None


@functools.cache
def console_class() -> type:
    """rich's Console with every printed segment's text escaped (made on first use: rich loads lazily)."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def render_str(self, text_: str, **kwargs: Any) -> Any:  # type: ignore[override]  # before measuring
            return super().render_str(text(text_), **kwargs)

        def render(self, renderable: Any, options: Any = None) -> Iterator[Any]:
            for seg in super().render(renderable, options):
                yield seg if seg.control or is_clean(seg.text) else Segment(text(seg.text), seg.style)

    return SafeConsole


def lines(values: Iterable[object]) -> list[str]:
    """Each value as text()."""
    return [text(v) for v in values]
