"""Line numbers for the keys of a TOML text: tomllib gives data without them.

A recipe's errors say FILE:LINE; KeyLines finds the line that defines a key path from the
table headers and the keys as written (quoted keys, dotted keys, inline tables), skipping
comments and multi-line strings.
"""

from __future__ import annotations

import re

_KEY_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*')


def _key_path(text: str) -> tuple[list[str], str] | None:
    """'a."b.c".d = 1' -> (['a', 'b.c', 'd'], ' = 1'); None when the text starts with no key."""
    parts, pos = [], 0
    while True:
        m = _KEY_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        parts.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return parts, text[pos:]


class KeyLines:
    """Which line of a TOML text defines a key path, found from table headers + keys."""

    def __init__(self, text: str):
        self.defs: list[tuple[tuple[str, ...], int, str]] = []  # (full path, line, rest of the line)
        header: list[str] = []
        in_multi = None
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if in_multi:
                if in_multi in line:
                    in_multi = None
                continue
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                inner = line.lstrip("[")
                kp = _key_path(inner)
                if kp:
                    header = kp[0]
                    self.defs.append((tuple(header), n, ""))
                continue
            kp = _key_path(line)
            if kp and kp[1].lstrip().startswith("="):
                rest = kp[1].lstrip()[1:]
                self.defs.append((tuple(header + kp[0]), n, rest))
                for q in ('"""', "'''"):
                    if rest.count(q) == 1:
                        in_multi = q

    def line(self, path: tuple[str, ...]) -> int:
        """The line defining `path`, else the line of its longest defined prefix, else 1."""
        best, best_len = 1, -1
        for p, n, rest in self.defs:
            if p == path:
                return n
            if path[: len(p)] == p and len(p) > best_len:
                # an inline table may hold the rest: { num_warps = 4 }
                tail = path[len(p) :]
                if tail and re.search(r"(?:^|[{,\s])" + r"\s*\.?\s*".join(re.escape(k) for k in tail) + r"\s*=", rest):
                    return n
                best, best_len = n, len(p)
        return best
