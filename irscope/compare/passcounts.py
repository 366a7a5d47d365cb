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
from irscope.compare.align import align

MAX_LINES = 3000  # a longer IR (the LLVM dialect after ConvertTritonGPUToLLVM) keeps the dump's count: its alignment costs ~0.7 s


def aligned(records: list[PassRecord], afters: list[str | None], first_ir: str) -> list[PassRecord]:
    """The records with added/removed counted by the aligned diff; a pass whose IR before or after was not
    dumped, or is longer than MAX_LINES, keeps the dump's count. The IR before a pass is the IR after the one
    before it (the frontend's for the first)."""
    out = []
    before: str | None = first_ir
    for rec, after in zip(records, afters):
        if rec.changed and before is not None and after is not None and _small(before) and _small(after):
            # a type a pass substituted everywhere is lines it changed: counted, not said once
            al = align(
                rec.stage if rec.stage in stages.names(passes=True) else "ttir", before, after, substitutions=False
            )
            rec = dataclasses.replace(rec, added=al.added, removed=al.removed)
        out.append(rec)
        before = after
    return out


def _small(text: str) -> bool:
    return text.count("\n") < MAX_LINES
