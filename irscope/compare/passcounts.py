"""Each MLIR pass's +lines/-lines as the aligned diff counts them (issue #39).

A dump records, per pass, the lines it added and removed, counted when the dump is made
(artifacts/passes.py, a layer below this one: locations stripped, then line by line). A pass that
removes one op renumbers every later %N, so those counts call most of the IR changed. `aligned`
counts again, between the IR before and after each pass that changed it, with compare/align.py: a
renaming of values is no change. `irscope passes` shows these counts.
"""

from __future__ import annotations

import dataclasses

from irscope import stages
from irscope.artifacts import PassRecord
from irscope.compare.align import Alignment, align
from irscope.compare.diff import hunk_ranges, hunks

MAX_LINES = 3000  # a longer IR (the LLVM dialect after ConvertTritonGPUToLLVM) keeps the dump's count: its alignment costs ~0.7 s


def aligned(records: list[PassRecord], afters: list[str | None], first_ir: str) -> list[PassRecord]:
    """The records with added/removed counted by the aligned diff; a pass whose IR before or after was not
    dumped, or is longer than MAX_LINES, keeps the dump's count. The IR before a pass is the IR after the one
    before it (the frontend's for the first)."""
    out = []
    before: str | None = first_ir
    for rec, after in zip(records, afters):
        al = alignment(rec, before, after)
        out.append(dataclasses.replace(rec, added=al.added, removed=al.removed) if al is not None else rec)
        before = after
    return out


def alignment(rec: PassRecord, before: str | None, after: str | None) -> Alignment | None:
    """The aligned diff of one pass (the IR before it against the IR after it), or None where the dump's own
    count stands: the pass changed nothing, an IR was not dumped, or one is longer than MAX_LINES."""
    if not rec.changed or before is None or after is None or not _small(before) or not _small(after):
        return None
    # a type a pass substituted everywhere is lines it changed: counted, not said once
    return align(rec.stage if rec.stage in stages.names(passes=True) else "ttir", before, after, substitutions=False)


def unified(al: Alignment, context: int = 3) -> list[str]:
    """The aligned diff as unified diff lines (hunk headers, then ' ', '-', '+' lines; a renamed line is
    context, shown as a has it), so that its +/- lines are the counts."""
    out: list[str] = []
    for group in hunks(al.opcodes(), context):
        out.append(f"@@ {hunk_ranges(group)} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag in ("equal", "moved"):
                out.extend(" " + ln.text for ln in al.a[a1:a2])
                continue
            out.extend("-" + ln.text for ln in al.a[a1:a2])
            out.extend("+" + ln.text for ln in al.b[b1:b2])
    return out


def _small(text: str) -> bool:
    return text.count("\n") < MAX_LINES
