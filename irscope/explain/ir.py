"""A dump's TTGIR read as data for the rules: each op with its results, operands, types, Python frames and
the loops around it; the function's arguments with their specialization (tt.divisibility)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from irscope.artifacts import lineinfo

_RESULTS = re.compile(r"^\s*((?:%[\w.$-]+(?::\d+)?(?:,\s*)?)+)\s*=\s*")
_VALUE = re.compile(r"%[\w.$-]+")
_ITER_ARG = re.compile(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+)")
_ARG = re.compile(r"(%[\w.$-]+):\s*([^{,)]+?)\s*(?:\{([^}]*)\})?\s*loc\(")
_DIVISIBILITY = re.compile(r"tt\.divisibility\s*=\s*(\d+)")
_TENSOR = re.compile(r"tensor<([\dx]+)x(!tt\.ptr<(\w+)>|\w+),\s*(#[\w.]+(?:<\{[^>]*\}>)?)")
_MODULE_INT = re.compile(r'"?(ttg\.num-warps|ttg\.threads-per-warp)"?\s*=\s*(\d+)')
_LAYOUT_DEF = re.compile(r"^(#\w+) = #(\w+)\.(\w+)<(.*)>\s*$")
_LIST = re.compile(r"(\w+)\s*=\s*\[([\d,\s]*)\]")
_INT_FIELD = re.compile(r"(\w+)\s*=\s*(\d+)")

TYPE_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
TYPE_BITS.update({t: 8 for t in ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ")})


@dataclass
class Arg:
    name: str  # without %
    type: str
    divisibility: int  # tt.divisibility (1: none)

    @property
    def pointer(self) -> bool:
        return self.type.startswith("!tt.ptr")


@dataclass
class Op:
    n: int  # line in the TTGIR file
    name: str
    results: list[str]
    operands: list[str]
    text: str
    frames: lineinfo.Frames
    loops: list[int] = field(default_factory=list)  # the TTGIR lines of the scf.for ops around it, outermost first
    whiles: list[int] = field(default_factory=list)  # the TTGIR lines of the scf.while ops around it
    tail: str = ""  # a region op's closing line (`} {tt.num_stages = 3 : i32} loc(...)`: its attributes)


@dataclass
class Tensor:
    shape: list[int]
    elem: str  # f16, or the pointee for a tensor of pointers
    pointer: bool
    layout: str  # the alias (#blocked) or the inline attribute

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def bits(self) -> int:
        return TYPE_BITS.get(self.elem, 32)


@dataclass
class Layout:
    alias: str
    kind: str  # blocked, nvidia_mma, amd_mfma, nvmma_shared, ...
    params: str
    lists: dict[str, list[int]]
    ints: dict[str, int]


@dataclass
class Module:
    ops: list[Op]
    args: dict[str, Arg]
    layouts: dict[str, Layout]
    num_warps: int
    warp_size: int
    defs: dict[str, Op]  # value -> the op that defines it
    carried: dict[str, list[str]]  # a loop's iteration value -> its initial value and what the loop yields into it
    uses: dict[str, list[Op]]

    def tensors(self, op: Op) -> list[Tensor]:
        return [
            Tensor([int(d) for d in m.group(1).split("x")], m.group(3) or m.group(2), bool(m.group(3)), m.group(4))
            for m in _TENSOR.finditer(op.text)
        ]

    def producers(self, value: str, limit: int = 400) -> tuple[list[Op], set[str]]:
        """Every op the value depends on (through loop-carried values too) and the function arguments reached."""
        seen: set[str] = set()
        ops: list[Op] = []
        args: set[str] = set()
        todo = [value]
        while todo and len(seen) < limit:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            if v[1:] in self.args:
                args.add(v[1:])
            if v in self.carried:
                todo.extend(self.carried[v])
            op = self.defs.get(v)
            if op is not None and op.name != "scf.for":
                if op not in ops:
                    ops.append(op)
                todo.extend(op.operands)
        return ops, args


def _parse_args(header: str) -> dict[str, Arg]:
    args = {}
    for m in _ARG.finditer(header):
        div = _DIVISIBILITY.search(m.group(3) or "")
        args[m.group(1)[1:]] = Arg(m.group(1)[1:], m.group(2).strip(), int(div.group(1)) if div else 1)
    return args


def _layouts(text: str) -> dict[str, Layout]:
    out = {}
    for line in text.splitlines():
        m = _LAYOUT_DEF.match(line)
        if m and not m.group(1).startswith("#loc"):
            params = m.group(4)
            lists = {k: [int(x) for x in v.split(",") if x.strip()] for k, v in _LIST.findall(params)}
            ints = {k: int(v) for k, v in _INT_FIELD.findall(params)}
            out[m.group(1)] = Layout(m.group(1), m.group(3), params, lists, ints)
    return out


def parse(text: str) -> Module:
    """The TTGIR (or TTIR) module's ops, arguments and layouts."""
    units = {u.line: u for u in lineinfo.mlir_units(text)}
    ops: list[Op] = []
    args: dict[str, Arg] = {}
    loops: list[tuple[int, Op | None]] = []  # open regions: (TTGIR line, the scf.for / scf.while op or None)
    carried: dict[str, list[str]] = {}
    ints = dict(_MODULE_INT.findall(text))
    for n, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if body.startswith("tt.func"):
            args.update(_parse_args(body))
        if body.startswith("}"):
            closed = loops.pop()[1] if loops else None
            if not body.endswith("{"):
                if closed is not None:
                    closed.tail = body
                continue
            # `} do {`: the while's body, a second region of the same op
            loops.append((n, closed if closed is not None and closed.name == "scf.while" else None))
            continue
        unit = units.get(n)
        m = _RESULTS.match(line)
        results = [r.split(":")[0] for r in _VALUE.findall(m.group(1))] if m else []
        rest = line[m.end() :] if m else line
        rest = re.sub(r"\bloc\(.*$", "", rest)
        name = unit.op if unit else (rest.split()[0] if rest.split() else "")
        op = Op(
            n,
            name,
            results,
            [v for v in _VALUE.findall(rest) if v not in results],
            body,
            unit.frames if unit else (),
            [o.n for _, o in loops if o is not None and o.name == "scf.for"],
            [o.n for _, o in loops if o is not None and o.name == "scf.while"],
        )
        if name == "scf.for":
            iv = re.match(r"\s*scf\.for\s+(%[\w.$-]+)\s*=\s*(%[\w.$-]+)\s+to\s+%[\w.$-]+\s+step\s+(%[\w.$-]+)", rest)
            if iv:  # the induction variable: its start and its step
                carried.setdefault(iv.group(1), []).extend([iv.group(2), iv.group(3)])
            for inner, init in _ITER_ARG.findall(rest.split("iter_args", 1)[1] if "iter_args" in rest else ""):
                carried.setdefault(inner, []).append(init)
            op.results = results
        if name == "scf.yield" and loops and loops[-1][1] is not None and loops[-1][1].name == "scf.for":
            _bind_yield(loops[-1][1], op, carried)
        if unit or name.startswith(("scf.", "tt.", "ttg.", "arith.")):
            ops.append(op)
        if body.endswith("{"):
            loops.append((n, op if name in ("scf.for", "scf.while") else None))
    return _module(
        ops, args, _layouts(text), int(ints.get("ttg.num-warps", 4)), int(ints.get("ttg.threads-per-warp", 32)), carried
    )


def _bind_yield(loop: Op, yield_op: Op, carried: dict[str, list[str]]) -> None:
    head = loop.text.split("iter_args", 1)
    if len(head) < 2:
        return
    inner = [a for a, _ in _ITER_ARG.findall(head[1])]
    for name, value in zip(inner, yield_op.operands):
        carried.setdefault(name, []).append(value)


def _module(ops, args, layouts, num_warps, warp_size, carried) -> Module:
    defs: dict[str, Op] = {}
    uses: dict[str, list[Op]] = {}
    for op in ops:
        for r in op.results:
            defs[r] = op
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    return Module(ops, args, layouts, num_warps, warp_size, defs, carried, uses)
