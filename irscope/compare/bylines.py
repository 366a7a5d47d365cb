"""Diff by Python line: what changed between two compiles, line by line (`irscope diff --by-line`).

Both sides' source maps (map.json) are aligned by (file name, line): "num_stages 3 -> 4" then
reads as "line 34: LDGSTS 24 -> 32, barrier 3 -> 4; line 36: spills 0 -> 48 B". Per line it
compares the machine stage (SASS, else AMDGCN, else PTX): instructions, each instruction class,
the opcodes of those classes (where both sides have the same machine stage), spill bytes; and
PTX registers written, TTGIR convert_layouts and layouts. Lines are matched by number: when the
sources differ (an edited copy) the header of the diff says so, and moved lines show as changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from irscope.artifacts import sourcemap
from irscope.artifacts.sourcemap import CLASSES
from irscope.compare.sides import Side
from irscope.records import MapEntry

NO_LINE = ("", 0)


@dataclass
class LineDelta:
    file: str  # as side a's map names it (else b's); "" for the "no line" units
    line: int  # 0: no line
    text: str | None  # None: the map has no text for the line (records.MapEntry allows it)
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)  # (figure, a, b): opcodes (same
    #   machine stage on both sides; else the classes), spills, registers, convert_layouts, layouts, instructions
    classes: list[tuple[str, Any, Any]] = field(default_factory=list)  # (instruction class, a, b)


def _key(entry: MapEntry) -> tuple[str, int]:
    return os.path.basename(entry["file"]), entry["line"]


def _figures(entry: MapEntry | None, machine: str | None, opcodes: bool) -> dict[str, Any]:
    """The compared figures of one line on one side (an absent line: all zero)."""
    if entry is None:
        return {}
    st: Mapping[str, Mapping[str, Any]] = entry["stages"]  # its figures, read with defaults
    m = st.get(machine or "", {})
    out: dict[str, Any] = {"instructions": m.get("n", 0)}
    for c in CLASSES:
        out["class:" + c] = m.get("classes", {}).get(c, 0)
    if opcodes:
        for op, n in m.get("ops", {}).items():
            if sourcemap.classify(machine, _Op(op)) is not None:
                out[op] = n
    out["spills"] = m.get("spill_bytes", 0)
    out["ptx registers"] = st.get("ptx", {}).get("regs", 0)
    out["convert_layouts"] = st.get("ttgir", {}).get("ops", {}).get("ttg.convert_layout", 0)
    out["layouts"] = st.get("ttgir", {}).get("layouts", [])
    return out


@dataclass(frozen=True)
class _Op:
    """An opcode alone, for classify() (which reads the op and, for PTX/AMD, the text)."""

    op: str

    @property
    def text(self) -> str:
        return self.op


def by_line(a: Side, b: Side) -> list[LineDelta]:
    """Per source line, the figures that differ between the sides (lines with no change left out)."""
    ma, mb = sourcemap.load(a.folder, a.manifest), sourcemap.load(b.folder, b.manifest)
    mach_a, mach_b = ma.get("machine"), mb.get("machine")
    same = mach_a == mach_b
    ea = {_key(e): e for e in ma["lines"]}
    eb = {_key(e): e for e in mb["lines"]}
    ea[NO_LINE] = {"file": "", "line": 0, "text": "(no line)", "stages": ma.get("no_line") or {}}
    eb[NO_LINE] = {"file": "", "line": 0, "text": "(no line)", "stages": mb.get("no_line") or {}}
    out = []
    for key in sorted(set(ea) | set(eb), key=lambda k: (k == NO_LINE, k)):
        fa, fb = _figures(ea.get(key), mach_a, same), _figures(eb.get(key), mach_b, same)
        names = list(fa) + [k for k in fb if k not in fa]
        empty: Callable[[str], Any] = lambda name: [] if name == "layouts" else 0
        changes = [
            (n, fa.get(n, empty(n)), fb.get(n, empty(n))) for n in names if fa.get(n, empty(n)) != fb.get(n, empty(n))
        ]
        if changes:
            ref = ea.get(key) or eb[key]  # the key is one side's
            classes = [(n[6:], x, y) for n, x, y in changes if n.startswith("class:")]
            rest = [c for c in changes if not c[0].startswith("class:")]
            if not same:  # no common opcodes: the classes say what changed
                rest = classes + rest
            out.append(LineDelta(ref["file"], ref["line"], ref.get("text"), _order(rest), classes))
    return out


def _order(changes: list[tuple[str, Any, Any]]) -> list[tuple[str, Any, Any]]:
    """Opcodes and classes first (what a person reads first), then spills, registers, layouts,
    and the instruction total last."""
    rank = {"spills": 2, "ptx registers": 3, "convert_layouts": 4, "layouts": 5, "instructions": 6}
    return sorted(changes, key=lambda c: rank.get(c[0], 1 if c[0] in CLASSES else 0))
