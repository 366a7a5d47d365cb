"""A stage's change in words and numbers, derived from its alignment (align.py).

    ops        per op or instruction kind (an MLIR op, an LLVM instruction or callee, a PTX or SASS opcode
               with its modifiers): lines only in a (removed), only in b (added), changed in place; the net
               count is b's total minus a's, since aligned lines are of one kind
    allocs     shared-memory allocations added, removed or resized, with their shape and size
               (`+1 ttg.local_alloc 128x64xf16 (16 KiB)`)
    classes    the stats' own classes (stats.TTGIR_OPS, PTX_OPS, SASS_CLASSES) counted over the changed lines'
               file text with the stats' own patterns: each net count equals the stats' difference
    loops      MLIR: each top-level loop's prologue, body and epilogue size on each side
    registers  PTX: the registers declared per class; SASS: the distinct registers used
    substituted  types and constants substituted consistently (substitute.py), each said once
    barriers   the stats' barrier patterns, each side's total

`summarize(stage, alignment) -> StageSummary`; `StageSummary.words()` says it in lines a person reads.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from irscope import stages
from irscope.artifacts import stats as stats_mod
from irscope.compare import substitute
from irscope.compare.align import ADDED, CHANGED, REMOVED, RENAMED, Alignment
from irscope.compare.lines import Line
from irscope.compare.substitute import Substitution

MLIR_OP_NAME = re.compile(r"^\s*(?:[%\w$.#:, -]+=\s*)?\"?([A-Za-z_][\w$]*\.[\w$.]+)")
LLVM_OP = re.compile(r"^\s*(?:%[\w$.\"-]+\s*=\s*)?(?:tail\s+|musttail\s+|notail\s+)?([a-z][\w.]*)")
LLVM_CALLEE = re.compile(r"@([\w$.-]+)\s*\(")
LLVM_ASM = re.compile(r'asm\s+(?:sideeffect\s+)?(?:convergent\s+)?"\s*([\w.:]+)')
PTX_OP = re.compile(r"^\s*(?:@!?%p\w+\s+)?([a-z][\w.:]*)")
SASS_OP = re.compile(r"^\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\b[^:]*;")
AMD_OP = re.compile(r"^\s*([a-z][a-z0-9_]+)\b")
MEMDESC = re.compile(r"!ttg\.memdesc<((?:\d+x)+)(\w+?)(\d+)\b")
PTX_REGS = re.compile(r"^\s*\.reg\s+\.(\w+)\s+%(\w+?)<(\d+)>")
SASS_REG = re.compile(r"(?<![\w.])(R|UR|P|UP)(\d+)(?!\w)")
BARRIERS = {
    "mlir": re.compile(stats_mod.TTGIR_OPS["barrier"]),
    "ptx": re.compile(r"^\s*(?:@!?%p\d+\s+)?(?:(?:bar|barrier)\.(?:sync|cta\.sync)|mbarrier\.)"),
    "sass": re.compile(r"^\s*(?:/\*[0-9a-f]{4,}\*/\s+)?(?:@!?U?P\w+\s+)?(?:BAR|SYNCS|WARPSYNC)\b"),
    "amdgcn": re.compile(r"^\s+s_barrier\b"),
}


def op_kind(lang: str, line: Line) -> str:
    """What a line does: its op, instruction (a call by its callee, inline asm by its first word) or
    opcode; "" for lines that are none (braces, labels, directives, comments)."""
    text = line.text
    if lang == "mlir":
        if text.lstrip().startswith("#"):
            return ""
        m = MLIR_OP_NAME.match(text)
        return m.group(1) if m else ""
    if lang == "llvm":
        m = LLVM_OP.match(text)
        if not m or text.rstrip().endswith(":") or m.group(1) in ("define", "declare", "attributes", "source_filename"):
            return ""
        if m.group(1) == "call":
            if asm := LLVM_ASM.search(text):
                return "asm " + asm.group(1)
            callee = LLVM_CALLEE.search(text)
            return "call @" + callee.group(1) if callee else "call"
        return m.group(1)
    if lang == "ptx":
        m = PTX_OP.match(text)
        return m.group(1) if m and not text.rstrip().endswith(":") else ""
    if lang == "sass":
        m = SASS_OP.match(text)
        return m.group(1) if m else ""
    if lang == "amdgcn":
        m = AMD_OP.match(text)
        return m.group(1) if m and not text.rstrip().endswith(":") else ""
    return ""


@dataclass
class OpDelta:
    kind: str
    removed: int  # lines of this kind only in a
    added: int  # only in b
    changed: int = 0  # lines of this kind on both sides, changed in place

    @property
    def net(self) -> int:
        return self.added - self.removed


@dataclass
class Loop:
    header: str  # the loop op (scf.for)
    prologue: tuple[int, int]  # lines before it in its function (after the loop before), a and b
    body: tuple[int, int]
    epilogue: tuple[int | None, int | None]  # after the last loop, else None


@dataclass
class StageSummary:
    stage: str
    ops: list[OpDelta] = field(default_factory=list)
    allocs: list[str] = field(default_factory=list)
    classes: dict[str, int] = field(default_factory=dict)  # the stats' class: b's count minus a's
    loops: list[Loop] = field(default_factory=list)
    registers: dict[str, tuple[int, int]] = field(default_factory=dict)
    barriers: tuple[int, int] = (0, 0)
    renamed: int = 0
    moved: int = 0
    substituted: list[Substitution] = field(default_factory=list)  # types and constants, said once

    def words(self) -> list[str]:
        """The summary as a person reads it, most telling first."""
        out: list[str] = []
        grown = [d for d in self.ops if d.net]
        grown.sort(key=lambda d: (-abs(d.net), d.kind))
        if grown:
            out.append(", ".join(f"{d.net:+d} {d.kind}" for d in grown[:12]) + (" ..." if len(grown) > 12 else ""))
        inplace = sorted((d for d in self.ops if d.changed), key=lambda d: (-d.changed, d.kind))
        if inplace:
            out.append("changed in place: " + ", ".join(f"{d.changed} {d.kind}" for d in inplace[:8]))
        out.extend(self.allocs)
        out.extend(f"substituted: {w}" for w in substitute.said(self.substituted))
        if self.classes:
            out.append("by class: " + ", ".join(f"{n:+d} {k}" for k, n in self.classes.items()))
        for n, loop in enumerate(self.loops, 1):
            parts = [f"prologue {_pair(loop.prologue)}", f"body {_pair(loop.body)}"]
            if loop.epilogue[0] is not None or loop.epilogue[1] is not None:
                parts.append(f"epilogue {_pair(loop.epilogue)}")
            out.append(f"{loop.header} #{n} (lines): " + ", ".join(parts))
        if self.barriers[0] != self.barriers[1]:
            out.append(f"barriers {self.barriers[0]} -> {self.barriers[1]}")
        if self.registers:
            out.append("registers: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in self.registers.items()))
        if self.moved and stages.language(self.stage) == "mlir":
            n = self.moved
            out.append(
                f"{n} constant{'s' if n != 1 else ''} defined elsewhere in {'its block' if n == 1 else 'their blocks'}, otherwise equal"
            )
        elif self.moved:
            out.append(f"{self.moved} instructions moved by the scheduler, otherwise equal")
        if self.renamed:
            subs = " and the substitutions above" if self.substituted else ""
            out.append(f"{self.renamed} lines equal up to the renaming of their values{subs}")
        return out


def _pair(p) -> str:
    a, b = p
    return str(a) if a == b else f"{'-' if a is None else a} -> {'-' if b is None else b}"


def summarize(al: Alignment) -> StageSummary:
    lang = stages.language(al.stage) or ""
    out = StageSummary(al.stage, renamed=al.renamed, moved=al.moved, substituted=list(al.substituted))
    removed: Counter[str] = Counter()
    added: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    gone_a: list[Line] = []
    new_b: list[Line] = []
    for r in al.rows:
        if r.kind not in (ADDED, REMOVED, CHANGED):
            continue
        la = al.a[r.a] if r.a is not None else None
        lb = al.b[r.b] if r.b is not None else None
        ka = op_kind(lang, la) if la is not None else ""
        kb = op_kind(lang, lb) if lb is not None else ""
        if la is not None:
            gone_a.append(la)
        if lb is not None:
            new_b.append(lb)
        if r.kind == CHANGED and ka == kb:
            if ka:
                changed[ka] += 1
            continue
        if ka:
            removed[ka] += 1
        if kb:
            added[kb] += 1
    kinds = list(dict.fromkeys([*removed, *added, *changed]))
    out.ops = [OpDelta(k, removed[k], added[k], changed[k]) for k in kinds]
    if lang == "mlir":
        out.allocs = _allocs(al)
        out.loops = _loops(al)
    out.classes = _classes(al.stage, lang, gone_a, new_b)
    out.registers = _registers(lang, al)
    if lang in BARRIERS:
        rx = BARRIERS[lang]
        out.barriers = (sum(1 for x in al.a if rx.search(x.raw)), sum(1 for x in al.b if rx.search(x.raw)))
    return out


def _size(m: re.Match) -> str:
    dims = [int(d) for d in m.group(1).rstrip("x").split("x")]
    bits = int(m.group(3))
    n = 1
    for d in dims:
        n *= d
    nbytes = n * bits // 8
    size = f"{nbytes // 1024} KiB" if nbytes % 1024 == 0 else f"{nbytes} B"
    return f"{m.group(1)}{m.group(2)}{m.group(3)} ({size})"


def _allocs(al: Alignment) -> list[str]:
    """Shared-memory allocations added, removed or resized (each side's own type and size; a resize is a
    renamed line when its type was substituted consistently)."""
    out = []
    for r in al.rows:
        la = al.a[r.a] if r.a is not None and r.kind in (REMOVED, CHANGED, RENAMED) else None
        lb = al.b[r.b] if r.b is not None and r.kind in (ADDED, CHANGED, RENAMED) else None
        ma = MEMDESC.search(la.text) if la is not None and "local_alloc" in la.text else None
        mb = MEMDESC.search(lb.text) if lb is not None and "local_alloc" in lb.text else None
        if ma and mb:
            if ma.group(0) != mb.group(0):
                out.append(f"ttg.local_alloc {_size(ma)} -> {_size(mb)}")
        elif mb:
            out.append(f"+1 ttg.local_alloc {_size(mb)}")
        elif ma:
            out.append(f"-1 ttg.local_alloc {_size(ma)}")
    return out


def _loop_shape(lines: list[Line]) -> list[tuple[str, int, int, int | None]]:
    """Per loop at a function's top level: (op, lines before it since the function's start or the loop
    before, lines of its body with the closing brace, lines after it to the function's end for the last)."""
    out: list[tuple[str, int, int, int | None]] = []
    func, since, loop, prologue, body = "", 0, "", 0, 0
    for ln in lines:
        fn, *parts = ln.scope.split("/")
        k = next((n for n, p in enumerate(parts) if p.endswith(".func")), None)
        if k is None:
            continue  # outside a function's body (its header, its closing brace, the module)
        if fn != func:
            if out and out[-1][3] is None:
                out[-1] = (*out[-1][:3], since)
            func, since, loop = fn, 0, ""
        depth = len(parts) - k - 1
        if loop and (depth or ln.text.strip().startswith("}")):
            body += 1
            if not depth:
                out.append((loop, prologue, body, None))
                loop, since = "", 0
            continue
        if ln.text.rstrip().endswith("{") and (m := MLIR_OP_NAME.match(ln.text)) and m.group(1) in LOOPS:
            loop, prologue, body = m.group(1), since, 1  # the header line is the body's first
            continue
        since += 1
    if out and out[-1][3] is None:
        out[-1] = (*out[-1][:3], since)
    return out


LOOPS = ("scf.for", "scf.while")


def _loops(al: Alignment) -> list[Loop]:
    sa, sb = _loop_shape(al.a), _loop_shape(al.b)
    out = []
    for k in range(max(len(sa), len(sb))):
        x = sa[k] if k < len(sa) else (sb[k][0], 0, 0, None)
        y = sb[k] if k < len(sb) else (sa[k][0], 0, 0, None)
        out.append(Loop(x[0], (x[1], y[1]), (x[2], y[2]), (x[3], y[3])))
    return out


def _classes(stage: str, lang: str, gone: list[Line], new: list[Line]) -> dict[str, int]:
    """The stats' classes over the changed lines' own text with the stats' own patterns: class -> count among
    the added lines minus the removed (aligned lines are of one kind, so this is b's total minus a's)."""
    patterns: dict[str, re.Pattern] = {}
    if stage == "ttgir":
        patterns = {k: re.compile(rx) for k, rx in stats_mod.TTGIR_OPS.items()}
    elif lang == "ptx":
        patterns = dict(stats_mod.PTX_OPS)
    if patterns:
        count = lambda lines, rx: sum(len(rx.findall(x.raw)) for x in lines if not x.raw.startswith("#"))
        pairs = {k: (count(gone, rx), count(new, rx)) for k, rx in patterns.items()}
    elif lang == "sass":
        ops = lambda lines: Counter(m.group(1) for x in lines if (m := stats_mod.SASS_LINE.match(x.raw)) is not None)
        oa, ob = ops(gone), ops(new)
        pairs = {
            k: (sum(oa[o] for o in members), sum(ob[o] for o in members))
            for k, members in stats_mod.SASS_CLASSES.items()
        }
        pairs["instructions"] = (sum(oa.values()), sum(ob.values()))
    else:
        return {}
    return {k: b - a for k, (a, b) in pairs.items() if a != b}


def _registers(lang: str, al: Alignment) -> dict[str, tuple[int, int]]:
    if lang == "ptx":
        decl = lambda lines: {f"%{m.group(2)}": int(m.group(3)) for x in lines if (m := PTX_REGS.match(x.text))}
        da, db = decl(al.a), decl(al.b)
        return {k: (da.get(k, 0), db.get(k, 0)) for k in dict.fromkeys([*da, *db]) if da.get(k) != db.get(k)}
    if lang == "sass":
        distinct = lambda lines: {
            cls: len({m.group(0) for x in lines for m in SASS_REG.finditer(x.text) if m.group(1) == cls})
            for cls in ("R", "UR", "P", "UP")
        }
        da, db = distinct(al.a), distinct(al.b)
        return {k: (da[k], db[k]) for k in da if da[k] != db[k]}
    return {}
