"""The finding record: what the output shows, where (Python line, TTGIR op, machine instructions), why (the
cause with its evidence) and the fix (a concrete setting, and what `explain --try` recompiles with)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = {
    "narrow-access": "global load/store narrower than the data allows",
    "dot-not-tensor-core": "tl.dot on FMA or mma.sync where wgmma / tcgen05 / MFMA was possible",
    "loop-not-pipelined": "a loop's global loads are not pipelined",
    "convert-in-loop": "convert_layout through shared memory inside a loop",
    "tma-unused": "a loop's operands copied with cp.async where TMA was possible",
    "spills": "registers spilled to local memory",
    "bank-conflicts": "shared-memory loads/stores whose lanes conflict on banks (Triton's model)",
    "low-occupancy": "so few warps fit on an SM (waves on a CU) that some of its schedulers have none",
}


@dataclass(frozen=True)
class Where:
    file: str  # the kernel file (as the compiler wrote it)
    line: int  # its line (0: none)
    text: str  # the Python line
    ttgir: list[str]  # "LINE: op text" of the TTGIR ops that show it
    machine: list[str]  # "LINE: instruction" of the SASS / AMDGCN (or PTX) instructions that show it


@dataclass(frozen=True)
class Fix:
    text: str  # the change, as a kernel engineer makes it
    args: dict[str, str] = field(default_factory=dict)  # --arg NAME=TYPE overrides that `--try` compiles with
    sets: dict[str, Any] = field(default_factory=dict)  # --set KEY=VALUE overrides that `--try` compiles with
    consts: dict[str, Any] = field(default_factory=dict)  # --const NAME=VALUE overrides

    @property
    def tryable(self) -> bool:
        return bool(self.args or self.sets or self.consts)


@dataclass(frozen=True)
class Finding:
    kind: str  # a key of KINDS
    cause: str  # a short tag of the cause (ptr-align, mask-bound, ...), stable for diffs and benchmarks
    what: str  # the fact, from the output
    where: Where
    why: str  # the cause, traced through the IR
    evidence: list[str]  # the pass that decided it, the IR that shows it, Triton's remark where there is one
    fix: Fix

    @property
    def key(self) -> tuple[str, int, str]:
        """What identifies a finding across two dumps of one kernel: kind, line, cause."""
        return (self.kind, self.where.line, self.cause)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["fix"]["tryable"] = self.fix.tryable
        return doc


def to_json(findings: list[Finding]) -> list[dict[str, Any]]:
    return [f.to_json() for f in findings]
