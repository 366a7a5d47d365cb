"""A small AxisInfo, along a tensor's last (fastest) dimension: each value's divisibility (the largest power of
two known to divide it; bytes for pointers) and constancy (runs of equal values, in elements), as Triton's
AxisInfo analysis derives them from the arguments' specialization (`tt.divisibility`) and the constants.

It exists to ask one question the IR does not print: would the access be wider if argument X were specialized
divisible by 16? (`blame`). Unknown ops give 1 and 1 (nothing known), so an argument is blamed only where the
known ops carry its divisibility to the address or the mask."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from irscope.explain import ir

CAP = 1 << 12
_PASS = {
    "arith.extsi",
    "arith.extui",
    "arith.trunci",
    "arith.index_cast",
    "ttg.convert_layout",
    "tt.reshape",
    "arith.bitcast",
    "tt.int_to_ptr",
    "tt.ptr_to_int",
    "ttg.memdesc_index",
    "tt.trans",
}
_MIN = {
    "arith.addi",
    "arith.subi",
    "arith.minsi",
    "arith.maxsi",
    "arith.minui",
    "arith.maxui",
    "arith.andi",
    "arith.ori",
    "arith.xori",
}
_SHAPE = re.compile(r"tensor<([\dx]+)x")
_START = re.compile(r"start\s*=\s*(-?\d+)")
_INT_CONST = re.compile(r"arith\.constant\s+(?:dense<)?(-?\d+)>?\s*:")


def _sum_contig(a: Info, b: Info) -> int:
    """A sum's contiguity: a contiguous run plus a value constant over it stays contiguous."""
    if b[1] >= CAP:
        return a[2]
    if a[1] >= CAP:
        return b[2]
    return 1


def lowbit(n: int) -> int:
    n = abs(n)
    return CAP if n == 0 else min(n & -n, CAP)


Info = tuple[int, int, int]  # (divisibility, constancy, contiguity) along the last dimension


@dataclass
class Axis:
    mod: ir.Module
    overrides: dict[str, int] = field(default_factory=dict)  # argument -> divisibility to assume
    memo: dict[str, Info] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)

    def of(self, v: str) -> Info:
        """(divisibility, constancy, contiguity) of value `v` along the last dimension."""
        if v in self.memo:
            return self.memo[v]
        if v in self.busy:
            return (CAP, CAP, 1)  # a loop's value seen again: optimistic, as a fixpoint starts
        self.busy.add(v)
        out = self._compute(v)
        self.busy.discard(v)
        self.memo[v] = out
        return out

    def _compute(self, v: str) -> Info:
        name = v[1:]
        if name in self.mod.args:
            return (self.overrides.get(name, self.mod.args[name].divisibility), CAP, 1)
        if v in self.mod.carried:  # a loop's iteration value: its start and what the loop yields (or its step)
            vals = [self.of(x) for x in self.mod.carried[v]]
            return (min(x[0] for x in vals), min(x[1] for x in vals), min(x[2] for x in vals))
        op = self.mod.defs.get(v)
        if op is None:
            return (1, 1, 1)
        return self._op(op)

    def _op(self, op: ir.Op) -> Info:  # noqa: C901, PLR0911 - one case an op, as AxisInfo's visitors
        o = [self.of(x) for x in op.operands]
        n = op.name
        if n == "arith.constant":
            m = _INT_CONST.search(op.text)
            return (lowbit(int(m.group(1))) if m else CAP, CAP, 1)
        if n == "tt.make_range":
            m = _START.search(op.text)
            size = _SHAPE.findall(op.text)
            return (lowbit(int(m.group(1))) if m else 1, 1, int(size[-1].split("x")[-1]) if size else 1)
        if n in ("tt.get_program_id", "tt.get_num_programs"):
            return (1, CAP, 1)
        if not o:
            return (1, 1, 1)
        if n == "tt.splat":
            return (o[0][0], CAP, 1)
        if n in ("tt.expand_dims", "tt.broadcast"):
            if not self._last_dim_one(op):
                return o[0]
            # a new (or broadcast) last dimension: constant along it; as Triton's ExpandDims visitor, a
            # contiguous operand's divisibility counts as 1 (its elements past the first are not divisible)
            return (1 if o[0][2] > 1 and n == "tt.expand_dims" else o[0][0], CAP, 1)
        if n in _PASS:
            return o[0]
        if n in _MIN and len(o) == 2:
            return (min(o[0][0], o[1][0]), min(o[0][1], o[1][1]), _sum_contig(o[0], o[1]) if n == "arith.addi" else 1)
        if n == "arith.muli" and len(o) == 2:
            return (min(o[0][0] * o[1][0], CAP), min(o[0][1], o[1][1]), 1)
        if n in ("arith.remsi", "arith.remui") and len(o) == 2:
            # x % y keeps what y's divisibility allows: a run of x stays contiguous, and aligned, up to it
            return (min(o[0][0], o[1][0]), o[0][1], min(o[0][2], o[1][0]))
        if n in ("arith.divsi", "arith.divui") and len(o) == 2:
            k = self._constant(op.operands[1])
            return (max(o[0][0] // k, 1) if k and k & (k - 1) == 0 else 1, o[0][1], 1)
        if n == "arith.cmpi" and len(o) == 2:
            a, b = o
            if a[1] >= CAP and b[1] >= CAP:
                return (CAP, CAP, 1)
            if a[1] == 1 and b[1] >= CAP or b[1] == 1 and a[1] >= CAP:
                return (CAP, min(a[0], b[0]), 1)  # a range against a bound: runs as long as both divisibilities
            return (CAP, min(a[1], b[1]), 1)
        if n == "arith.select" and len(o) == 3:
            return (min(o[1][0], o[2][0]), min(o[0][1], o[1][1], o[2][1]), 1)
        if n == "tt.addptr" and len(o) == 2:
            eb = self._elem_bytes(op)
            return (min(o[0][0], o[1][0] * eb), min(o[0][1], o[1][1]), _sum_contig(o[0], o[1]))
        return (1, 1, 1)

    def _constant(self, v: str) -> int:
        d = self.mod.defs.get(v)
        if d is None or d.name != "arith.constant":
            return 0
        m = _INT_CONST.search(d.text)
        return abs(int(m.group(1))) if m else 0

    def _last_dim_one(self, op: ir.Op) -> bool:
        shapes = _SHAPE.findall(op.text)
        if op.name == "tt.expand_dims":
            return bool(shapes) and shapes[-1].split("x")[-1] == "1"
        return bool(shapes) and shapes[0].split("x")[-1] == "1"

    def _elem_bytes(self, op: ir.Op) -> int:
        m = re.search(r"!tt\.ptr<(\w+)>", op.text)
        return max(ir.TYPE_BITS.get(m.group(1), 8) // 8, 1) if m else 1


def blame(mod: ir.Module, value: str, need: int, constancy: bool) -> tuple[int, list[str]]:
    """The value's divisibility (or constancy) and the arguments not known divisible by 16 that hold it below
    `need`: those whose specialization :16 is needed for what all of them together would give (several can be
    needed at once, as a stride and a bound in one address), else each that raises it alone."""
    pick = 1 if constancy else 0
    base = Axis(mod).of(value)[pick]
    if base >= need:
        return base, []
    names = [n for n, a in sorted(mod.args.items()) if a.divisibility < 16 and (a.pointer or a.type.startswith("i"))]
    full = Axis(mod, dict.fromkeys(names, 16)).of(value)[pick]
    if full <= base:
        return base, []
    needed = [n for n in names if Axis(mod, {m: 16 for m in names if m != n}).of(value)[pick] < full]
    if needed:
        return base, needed
    return base, [n for n in names if Axis(mod, {n: 16}).of(value)[pick] > base]
