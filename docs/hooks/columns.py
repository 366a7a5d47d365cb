"""A griffe extension for the API pages: irscope's docstrings list parameters and attributes in aligned
columns (`kernel     the @triton.jit ...`, continuation lines indented to the column), written to be read in
a terminal. Markdown would run each block into one paragraph, so each block becomes a list, `name` first;
and `*`, `_`, `<` outside backticks are escaped, so `*fp16:16`, `fn(*args)` or `__init__` is not read as
emphasis or HTML.
The docstrings themselves are unchanged (mkdocs.yml loads this file; exclude_docs keeps it off the site)."""

from __future__ import annotations

import re
from typing import Any

import griffe

ENTRY = re.compile(r"^(\S.*?)\s{2,}(\S.*)$")


def _escape(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        p if p.startswith("`") else p.replace("*", r"\*").replace("_", r"\_").replace("<", "&lt;") for p in parts
    )


def _entries(block: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The block's leading (name, text) entries — a line that starts one (name, two or more spaces, text),
    then the indented lines that continue it — and the prose lines after them."""
    entries: list[tuple[str, str]] = []
    for i, line in enumerate(block):
        m = ENTRY.match(line)
        if m and not line.startswith(" "):
            entries.append((m.group(1), m.group(2)))
        elif line.startswith(" ") and entries:
            name, text = entries[-1]
            entries[-1] = (name, f"{text} {line.strip()}")
        else:
            return entries, block[i:]
    return entries, []


def columns_to_markdown(doc: str) -> str:
    out = []
    for block in re.split(r"\n\s*\n", doc):
        lines = block.splitlines()
        if lines and lines[0].startswith("    "):
            out.append(block)  # an indented example: a code block
            continue
        entries, rest = _entries(lines)
        if entries:
            out.append("\n".join(f"- `{name.lstrip('.')}`: {_escape(text)}" for name, text in entries))
        if rest:
            out.append(_escape("\n".join(rest)))
    return "\n\n".join(out)


class ColumnDocstrings(griffe.Extension):
    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = columns_to_markdown(obj.docstring.value)
