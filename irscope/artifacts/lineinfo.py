"""Read the source locations the compiler already writes into each stage, line by line.

Every parser returns, for a stage's text, one entry per *unit* (an MLIR op, an LLVM IR
instruction, a PTX / SASS / AMDGCN instruction): `Unit(line, frames, op)` where `line` is the
1-based line in the stage file and `frames` the Python call chain that produced it, outermost
first: `(("kernel.py", 36),)` for a line of the kernel, `(("kernel.py", 17), ("standard.py", 43))`
for `tl.cdiv` inlined at line 17. `frames` is () where the compiler left no line (prologue,
hoisted address arithmetic): those are counted as "no line", never guessed.

Where each stage keeps its locations:
  MLIR (TTIR, TTGIR, pass dumps)  `loc(...)` after each op, `#locN = loc(...)` alias tables,
                                  `callsite(callee at caller)`, `fused[...]`, names; a region op
                                  (scf.for) prints its loc after its closing brace
  LLVM IR                         `!dbg !N` -> !DILocation(line, scope, inlinedAt) -> DIFile
  PTX, AMDGCN                     `.file` table and `.loc F L C`, in effect until the next;
                                  LLVM's comment after it (`// standard.py:43:17 @[ k.py:17:27 ]`)
                                  carries the inlining chain
  SASS                            nvdisasm -g -gp: `//## File "k.py", line 36` (source) and
                                  `//## File ".nv_debug_ptx_txt", line 716` (the PTX line)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

Frame = tuple[str, int]  # (file path as the compiler wrote it, 1-based line)
Frames = tuple[Frame, ...]  # outermost caller first; () = no line


@dataclass(frozen=True)
class Unit:
    line: int  # 1-based line in the stage file
    frames: Frames
    op: str  # op name / opcode (for figures)
    text: str = ""  # the unit's line (for per-stage figures)


# ------------------------------------------------------------------ MLIR

_ALIAS_DEF = re.compile(r"^(#loc\w*) = loc\((.*)\)\s*$")
_OP = re.compile(r'^\s*(?:%[^=]*?=\s*)?"?([a-z_][\w]*\.[\w.]+)')
_NOT_OPS = {"tt.func", "func.func", "llvm.func", "gpu.module", "builtin.module", "ttg.warp_specialize.partitions"}
_TRAILING_LOC = re.compile(r"\bloc\((.*)\)\s*$")


class _LocParser:
    """MLIR's printed location syntax -> Frames, with #loc aliases resolved lazily."""

    def __init__(self, aliases: dict[str, str]):
        self.raw = aliases
        self.done: dict[str, Frames] = {}

    def alias(self, name: str, depth: int = 0) -> Frames:
        if name in self.done:
            return self.done[name]
        text = self.raw.get(name)
        if text is None or depth > 64:
            return ()
        self.done[name] = ()  # cycle guard
        frames = self.parse(text, depth + 1)
        self.done[name] = frames
        return frames

    def parse(self, text: str, depth: int = 0) -> Frames:
        try:
            frames, _ = self._expr(text, 0, depth)
        except (IndexError, ValueError):
            return ()
        return frames

    def _expr(self, s: str, i: int, depth: int) -> tuple[Frames, int]:
        while s[i] == " ":
            i += 1
        if s.startswith("#loc", i):
            m = _match(r"#loc\w*", s, i)
            return self.alias(m.group(0), depth), m.end()
        if s.startswith("callsite(", i):
            callee, i = self._expr(s, i + len("callsite("), depth)
            if not s.startswith(" at ", i):
                raise ValueError("callsite without 'at'")
            caller, i = self._expr(s, i + 4, depth)
            return (caller + callee) if caller and callee else (callee or caller), _expect(s, i, ")")
        if s.startswith("fused", i):
            i += len("fused")
            if s[i] == "<":
                i = _skip_balanced(s, i, "<", ">")
            i = _expect(s, i, "[")
            first: Frames = ()
            while True:
                frames, i = self._expr(s, i, depth)
                first = first or frames
                while s[i] == " ":
                    i += 1
                if s[i] == ",":
                    i += 1
                    continue
                return first, _expect(s, i, "]")
        if s.startswith("unknown", i):
            return (), i + len("unknown")
        if s[i] == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            name, i = s[i + 1 : j], j + 1
            if s.startswith(":", i):  # "file":line:col [to ...]
                m = _match(r":(\d+):(\d+)(?: to (?:\d+:)?:?\d+)?", s, i)
                line = int(m.group(1))
                return (((name, line),) if line > 0 else ()), m.end()
            if s.startswith("(", i):  # a name with a child location
                frames, i = self._expr(s, i + 1, depth)
                return frames, _expect(s, i, ")")
            return (), i
        raise ValueError(f"unknown location syntax at {s[i : i + 20]!r}")


def _match(pattern: str, s: str, i: int) -> re.Match[str]:
    """The pattern's match at i; ValueError (unparseable, as a bad index is: parse gives no line) if none."""
    m = re.compile(pattern).match(s, i)
    if m is None:
        raise ValueError(f"expected {pattern!r} at {s[i : i + 20]!r}")
    return m


def _expect(s: str, i: int, ch: str) -> int:
    while s[i] == " ":
        i += 1
    if s[i] != ch:
        raise ValueError(f"expected {ch!r}")
    return i + 1


def _skip_balanced(s: str, i: int, open_: str, close: str) -> int:
    depth = 0
    while True:
        if s[i] == open_:
            depth += 1
        elif s[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def mlir_units(text: str) -> list[Unit]:
    """One Unit per op of an MLIR module (TTIR, TTGIR, a pass dump); region ops take the loc
    printed after their closing brace."""
    lines = text.splitlines()
    aliases = {m.group(1): m.group(2) for line in lines if line.startswith("#loc") and (m := _ALIAS_DEF.match(line))}
    parser = _LocParser(aliases)
    units: dict[int, Unit] = {}
    open_ops: list[tuple[int, str, str]] = []  # region ops whose loc comes after their "}"
    for n, line in enumerate(lines, 1):
        if not line.startswith(" "):
            continue
        body = line.strip()
        loc = _TRAILING_LOC.search(line)
        closes = body.startswith("}")
        if closes and open_ops:
            opener = open_ops.pop()
            if body.endswith("{"):  # "} else {": the same op goes on
                open_ops.append(opener)
            elif loc and opener[1] not in _NOT_OPS:
                units[opener[0]] = Unit(opener[0], parser.parse(loc.group(1)), opener[1], opener[2])
            continue
        m = _OP.match(line)
        if not m or body.startswith("^"):
            if body.endswith("{"):
                open_ops.append((n, "", body))
            continue
        op = m.group(1)
        if body.endswith("{"):
            open_ops.append((n, op, body))
            continue
        if op in _NOT_OPS:
            continue
        units[n] = Unit(n, parser.parse(loc.group(1)) if loc else (), op, body)
    return [units[k] for k in sorted(units)]


# ------------------------------------------------------------------ LLVM IR

_DILOC = re.compile(r"^!(\d+) = !DILocation\(line: (\d+)(?:, column: \d+)?, scope: !(\d+)(?:, inlinedAt: !(\d+))?")
_DIFILE = re.compile(r'^!(\d+) = !DIFile\(filename: "([^"]*)", directory: "([^"]*)"')
_DISCOPE = re.compile(r"^!(\d+) = (?:distinct )?!DI\w+\(.*?\bscope: !(\d+)")
_DIFILE_REF = re.compile(r"^!(\d+) = (?:distinct )?!DI\w+\(.*?\bfile: !(\d+)")
_DBG = re.compile(r"!dbg !(\d+)")
_LLIR_OP = re.compile(r"^\s+(?:%[\w.]+ = )?(?:tail |musttail |notail )?(\w+)")


def llir_units(text: str) -> list[Unit]:  # noqa: C901
    """One Unit per instruction inside a `define`; locations from !dbg -> !DILocation chains."""
    lines = text.splitlines()
    locs, files, scope_file, scope_parent = {}, {}, {}, {}
    for line in lines:
        if not line.startswith("!"):
            continue
        if m := _DILOC.match(line):
            locs[m.group(1)] = (int(m.group(2)), m.group(3), m.group(4))
        elif m := _DIFILE.match(line):
            files[m.group(1)] = os.path.join(m.group(3), m.group(2)) if m.group(3) else m.group(2)
        else:
            if m := _DIFILE_REF.match(line):
                scope_file[m.group(1)] = m.group(2)
            if m := _DISCOPE.match(line):
                scope_parent[m.group(1)] = m.group(2)

    def file_of(scope: str) -> str:
        for _ in range(32):
            if scope in scope_file:
                return files.get(scope_file[scope], "?")
            scope = scope_parent.get(scope, "")
        return "?"

    memo: dict[str, Frames] = {}

    def frames_of(ref: str, depth: int = 0) -> Frames:
        if ref in memo:
            return memo[ref]
        loc = locs.get(ref)
        if loc is None or depth > 64:
            return ()
        line, scope, inlined = loc
        own: Frames = ((file_of(scope), line),) if line > 0 else ()
        out = (frames_of(inlined, depth + 1) + own) if inlined and own else own
        memo[ref] = out
        return out

    units, inside = [], False
    for n, line in enumerate(lines, 1):
        if line.startswith("define "):
            inside = True
            continue
        if inside and line.startswith("}"):
            inside = False
            continue
        if not inside or not line.startswith(" ") or line.lstrip().startswith(("#dbg_", ";")):
            continue
        m = _LLIR_OP.match(line)
        if not m:
            continue
        dbg = _DBG.search(line)
        units.append(Unit(n, frames_of(dbg.group(1)) if dbg else (), m.group(1), line.strip()))
    return units


# ------------------------------------------------------------------ PTX and AMDGCN (.file / .loc)

_FILE_DIRECTIVE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_LOC_DIRECTIVE = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+([^/;]*)(?:(?://|;)(.*))?$")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+\d+")
_CALLER = re.compile(r"@\[\s*([^\s:@\[\]]+):(\d+)(?::\d+)?")
_PTX_OP = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w]*(?:\.[\w:]+)?)")
_AMD_OP = re.compile(
    r"^\s+([sv]_[a-z0-9_]+|global_[a-z0-9_]+|buffer_[a-z0-9_]+|ds_[a-z0-9_]+|flat_[a-z0-9_]+"
    r"|scratch_[a-z0-9_]+)\b"
)


def _file_table(lines: list[str]) -> dict[str, str]:
    files = {}
    for line in lines:
        if ".file" in line and (m := _FILE_DIRECTIVE.match(line)):
            files[m.group(1)] = os.path.join(m.group(2), m.group(3)) if m.group(3) is not None else m.group(2)
    return files


def _loc_frames(m: re.Match, files: dict[str, str], by_name: dict[str, str]) -> Frames:
    """A .loc directive's frames: the file and line, and the callers LLVM names in its comment
    (`@[ caller.py:17:27 @[ outer.py:3:1 ] ]`) or PTX's `inlined_at`."""
    line = int(m.group(2))
    if line <= 0:
        return ()
    own = (files.get(m.group(1), "?"), line)
    comment = m.group(4) or ""
    callers = [(by_name.get(f, f), int(ln)) for f, ln in _CALLER.findall(comment)]
    if not callers and (at := _INLINED_AT.search(m.group(3) or "")):
        callers = [(files.get(at.group(1), "?"), int(at.group(2)))]
    return tuple(reversed(callers)) + (own,)


def _by_basename(files: dict[str, str]) -> dict[str, str]:
    names: dict[str, list[str]] = {}
    for path in files.values():
        names.setdefault(os.path.basename(path), []).append(path)
    return {base: paths[0] for base, paths in names.items() if len(set(paths)) == 1}


def ptx_units(text: str) -> list[Unit]:
    """One Unit per PTX instruction (inline asm included), under the .loc in effect."""
    lines = text.splitlines()
    files = _file_table(lines)
    by_name = _by_basename(files)
    units: list[Unit] = []
    current: Frames = ()
    for n, line in enumerate(lines, 1):
        body = line.strip()
        if not body or body.startswith("//"):
            continue
        if body.startswith(".loc"):
            if m := _LOC_DIRECTIVE.match(line):
                current = _loc_frames(m, files, by_name)
            continue
        if body.startswith((".entry", ".func", ".visible", ".extern")):
            current = ()
            continue
        if body[0] in ".{}$" or not body.endswith(";"):
            continue
        m = _PTX_OP.match(line)
        if m:
            units.append(Unit(n, current, m.group(1), body))
    return units


def amdgcn_units(text: str) -> list[Unit]:
    """One Unit per AMDGCN instruction, under the .loc in effect."""
    lines = text.splitlines()
    files = _file_table(lines)
    by_name = _by_basename(files)
    units: list[Unit] = []
    current: Frames = ()
    for n, line in enumerate(lines, 1):
        if line.startswith(("\t.loc", " .loc")):
            if m := _LOC_DIRECTIVE.match(line):
                current = _loc_frames(m, files, by_name)
            continue
        if line and not line[0].isspace():  # a function's label starts it with no line; a block's keeps it
            if line.rstrip().endswith(":") and not line.startswith((".", "$")):
                current = ()
            continue
        if m := _AMD_OP.match(line):
            units.append(Unit(n, current, m.group(1), line.strip()))
    return units


# ------------------------------------------------------------------ SASS (nvdisasm -g -gp)

_SASS_INFO = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_SASS_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
PTX_TEXT = ".nv_debug_ptx_txt"


@dataclass(frozen=True)
class SassLine:
    line: int  # 1-based line in the plain .sass text
    source: Frames  # nvdisasm -g: the source line (with -gi, its callers), outermost first
    ptx_line: int | None  # nvdisasm -gp: the PTX line it came from
    op: str
    text: str


def split_sass(annotated: str) -> tuple[str, list[SassLine]]:
    """nvdisasm -g -gp output -> (the same text as plain `nvdisasm -c`, the line info of each
    instruction). The .sass file stays as it was; the line info goes to the map."""
    plain: list[str] = []
    info: list[SassLine] = []
    source: Frames = ()
    pending: list[Frame | None] = []  # this block's source lines: innermost first (-gi adds the callers)
    ptx_line: int | None = None
    for line in annotated.splitlines(keepends=True):
        if "//##" in line and (m := _SASS_INFO.match(line)):
            n = int(m.group(2))
            if m.group(1) == PTX_TEXT:
                ptx_line = n or None
            else:
                pending.append((m.group(1), n) if n > 0 else None)
            continue
        if "//##" in line:
            continue
        plain.append(line)
        if m := _SASS_INSTR.match(line):
            if pending:
                source = () if pending[0] is None else tuple(f for f in reversed(pending) if f is not None)
                pending = []
            info.append(SassLine(len(plain), source, ptx_line, m.group(1), line.strip()))
        elif line.strip().startswith((".text.", ".section")) or line.startswith("\t.text"):
            source, pending, ptx_line = (), [], None
    return "".join(plain), info


def sass_units(info: list[SassLine], ptx: list[Unit]) -> list[Unit]:
    """SASS instructions with frames: the PTX line's chain (which names the inlined callers) when it
    agrees with nvdisasm's own source line, else that source line alone."""
    by_ptx = {u.line: u.frames for u in ptx}
    units = []
    for s in info:
        frames = s.source
        chain = by_ptx.get(s.ptx_line or -1)
        if chain and frames and len(chain) > len(frames) and _same_frame(chain[-1], frames[-1]):
            frames = chain
        units.append(Unit(s.line, frames, s.op, s.text))
    return units


def _same_frame(a: Frame, b: Frame) -> bool:
    return a[1] == b[1] and os.path.basename(a[0]) == os.path.basename(b[0])


def sass_units_from_text(sass: str) -> list[Unit]:
    """SASS without line info (a dump made before nvdisasm ran with -g): every instruction unmapped."""
    return [
        Unit(n, (), m.group(1), line.strip())
        for n, line in enumerate(sass.splitlines(), 1)
        if (m := _SASS_INSTR.match(line))
    ]


# the parser of each stage language (stages.py's `language` column): a new stage in one of these
# languages is read by its row alone. SASS with nvdisasm's -g -gp table goes through sass_units.
UNITS: dict[str, Callable[[str], list[Unit]]] = {
    "mlir": mlir_units,
    "llvm": llir_units,
    "ptx": ptx_units,
    "amdgcn": amdgcn_units,
    "sass": sass_units_from_text,
}
