"""Every text a tool returns is one page of it, with the whole's size said, so a result fits an agent's
context: pages are whole lines (`offset` lines skipped, at most `limit` lines and MAX_CHARS characters), and
lists are pages of rows. `next_offset` is where the next page starts (None: this page is the last)."""

from __future__ import annotations

from typing import Any, TypedDict

from irscope.errors import BadInput

DEFAULT_LINES = 200
MAX_LINES = 2000
MAX_CHARS = 40_000  # about 10k tokens: one page never floods a context
DEFAULT_ROWS = 30
MAX_ROWS = 500


class TextPage(TypedDict):
    """One page of a text: its lines offset+1 .. offset+lines (1-based, inclusive) of total_lines."""

    text: str
    offset: int
    lines: int
    total_lines: int
    total_chars: int
    next_offset: int | None


def check(offset: int, limit: int, most: int, what: str) -> None:
    """offset >= 0 and 1 <= limit <= most, else one BadInput line."""
    if offset < 0:
        raise BadInput(f"offset={offset}: give 0 or more {what} to skip")
    if not 1 <= limit <= most:
        raise BadInput(f"limit={limit}: give 1 to {most} {what} a page")


def text_page(text: str, offset: int = 0, limit: int = DEFAULT_LINES) -> TextPage:
    """Lines offset.. of `text`, at most `limit` lines and MAX_CHARS characters (a line longer than that
    alone is cut, and said with " [line cut at N characters]")."""
    check(offset, limit, MAX_LINES, "lines")
    lines = text.splitlines(keepends=True)
    taken: list[str] = []
    size = 0
    for line in lines[offset : offset + limit]:
        if size + len(line) > MAX_CHARS:
            if not taken:  # one huge line: its start, said as cut
                taken.append(line[:MAX_CHARS] + f" [line cut at {MAX_CHARS} characters]\n")
            break
        taken.append(line)
        size += len(line)
    end = min(offset, len(lines)) + len(taken)
    return TextPage(
        text="".join(taken),
        offset=offset,
        lines=len(taken),
        total_lines=len(lines),
        total_chars=len(text),
        next_offset=end if end < len(lines) else None,
    )


def rows_page(rows: list[Any], offset: int = 0, limit: int = DEFAULT_ROWS) -> dict[str, Any]:
    """rows[offset:offset+limit] as {"rows", "offset", "total", "next_offset"}."""
    check(offset, limit, MAX_ROWS, "rows")
    shown = rows[offset : offset + limit]
    end = min(offset, len(rows)) + len(shown)
    return {"rows": shown, "offset": offset, "total": len(rows), "next_offset": end if end < len(rows) else None}
