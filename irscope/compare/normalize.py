"""Per-stage normalisers: keep what the compiler decided, drop what only names or places it.

`irscope diff` compares stages after normalisation, so that only real changes show:

    MLIR (frontend, ttir, ttgir, glir)
        `#locN = ...` lines and `loc(...)` suffixes dropped; SSA values (%0, %arg3,
        %c1024_i32, %offsets_2) and block labels (^bb1) renumbered per function
    LLVM IR (llir)
        debug metadata (!DI..., `!dbg !N`, #dbg_ records) dropped; values and block
        labels renumbered per function, other metadata (!N) per module
    PTX
        `.loc` / `.file` lines, debug sections and debug-only labels ($L__tmp3)
        dropped; virtual registers (%r12, %rd3, %p1, %f5, ...) renumbered per class
        and function, labels ($L__BB0_2) per function
    SASS
        /*0040*/ addresses and encodings dropped, spacing made uniform; registers
        (R12, UR4, P0, UP1, B0) and labels (.L_x_3) renumbered per function
    AMDGCN
        `.loc` / `.file` lines, debug sections and .Ltmp labels dropped; registers
        (v3, s[4:5], a0) and labels (.LBB0_2) renumbered per function
    all stages
        absolute file paths reduced to the file name, hashes (32+ hex digits)
        replaced by <hash>, trailing spaces and blank lines dropped

Renumbering maps each name to a canonical one in order of first appearance, within
one scope (a function; one counter per register class). So a register or value that
is only named differently is not a difference, while a changed dataflow (a value used
where another was before) still is. Scopes are per function so that a change in one
function does not renumber the next.

Each normaliser returns a `Normalized`: the lines, and for each the 1-based line
number it came from, so a diff can point into the original file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from irscope import stages


@dataclass
class Normalized:
    lines: list[str] = field(default_factory=list)
    origin: list[int] = field(default_factory=list)  # 1-based line in the original text

    def add(self, line: str, lineno: int) -> None:
        self.lines.append(line)
        self.origin.append(lineno)


class Renamer:
    """Canonical names in order of first appearance, one counter per class, reset per scope."""

    def __init__(self, rename: bool = True):
        self.names: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        self.rename = rename  # False: every name kept as it is (the aligned diff's cleaning)

    def reset(self) -> None:
        self.names.clear()
        self.counters.clear()

    def get(self, token: str, cls: str, fmt: Callable[[int], str], width: int = 1) -> str:
        name = self.names.get(token)
        if name is None and not self.rename:
            name = self.names[token] = token
        elif name is None:
            n = self.counters.get(cls, 0)
            self.counters[cls] = n + width
            name = self.names[token] = fmt(n)
        return name


# ---------------------------------------------------------------- shared


PATH = re.compile(r'"(?:/|[A-Za-z]:[\\/])(?:[^"\n]*[\\/])?([^"\\/\n]*)"')
HEX_RUN = re.compile(r"[0-9a-fA-F]{32,}")


def _hash(m: re.Match) -> str:
    """A run of 32+ hex digits standing alone is a hash; one inside a word or a 0x literal is not."""
    s, i, j = m.string, m.start(), m.end()
    before = s[i - 1] if i else " "
    after = s[j] if j < len(s) else " "
    if before.isalnum() or before in "_$" or after.isalnum() or after in "_$":
        return m.group(0)
    return "<hash>"


def _common(text: str) -> str:
    """Absolute paths -> file name, hashes -> <hash>; on a whole text (never joins lines)."""
    text = PATH.sub(r'"\1"', text)
    return HEX_RUN.sub(_hash, text)


def _nested(depth: int) -> str:
    """A regex for a balanced (...) group on one line, `depth` levels deep, strings allowed."""
    string = r'"(?:[^"\\\n]|\\.)*"'
    pat = r"\((?:[^()\"\n]|" + string + r")*\)"
    for _ in range(depth):
        pat = r"\((?:[^()\"\n]|" + string + "|" + pat + r")*\)"
    return pat


# ---------------------------------------------------------------- MLIR

MLIR_LOC = re.compile(r" loc" + _nested(4))  # MLIR prints " loc(...)"; the literal start keeps it fast
MLIR_NAME = re.compile(r"%(?:\d+|[A-Za-z$._-][\w$.-]*)|\^[\w$.-]+")
MLIR_FUNC = re.compile(r"^\s*(?:tt\.func|func\.func|llvm\.func|gpu\.func)\b")


def mlir(text: str, rename: bool = True) -> Normalized:
    out = Normalized()
    ren = Renamer(rename)
    names = ren.names  # the hot path of pass-by-pass comparisons: Renamer.get inlined

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        name = names.get(tok)
        if name is None:
            if tok[0] == "^":
                name = ren.get(tok, "^", lambda n: f"^bb{n}")
            else:
                name = ren.get(tok, "%", lambda n: f"%{n}")
        return name

    for i, line in enumerate(_common(MLIR_LOC.sub("", text)).splitlines(), 1):
        if line.startswith("#loc"):
            continue
        line = line.rstrip()
        if not line.strip():
            continue
        if MLIR_FUNC.match(line):
            ren.reset()
        if "%" in line or "^" in line:
            line = MLIR_NAME.sub(sub, line)
        out.add(line, i)
    return out


# ---------------------------------------------------------------- LLVM IR

LLIR_DBG_REF = re.compile(r",?\s*!dbg !\d+")
LLIR_DBG_LINE = re.compile(
    r"^(?:!\d+ = (?:distinct )?!DI|!llvm\.dbg\.|\s*#dbg_|\s*(?:tail )?call void @llvm\.dbg\.|"
    r"declare void @llvm\.dbg\.)"
)
LLIR_LOCAL = re.compile(r'%(?:\d+|[A-Za-z$._-][\w$.-]*|"[^"]*")|!\d+')
LLIR_LABEL = re.compile(r'^([\w$.-]+|"[^"]*"):')


def llir(text: str, rename: bool = True) -> Normalized:
    out = Normalized()
    local = Renamer(rename)
    meta = Renamer(rename)

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok[0] == "!":
            return meta.get(tok, "!", lambda n: f"!{n}")
        return local.get(tok, "%", lambda n: f"%{n}")

    for i, line in enumerate(_common(text).splitlines(), 1):
        if LLIR_DBG_LINE.match(line):
            continue
        if "!dbg" in line:
            line = LLIR_DBG_REF.sub("", line)
        line = line.rstrip()
        if not line.strip():
            continue
        if line.startswith("define "):
            local.reset()
        if (m := LLIR_LABEL.match(line)) and not line.startswith(("define", "declare")):
            label = local.get("%" + m.group(1), "%", lambda n: f"%{n}")[1:]
            line = label + ":" + line[m.end() :]
            line = line[: len(label) + 1] + LLIR_LOCAL.sub(sub, line[len(label) + 1 :])
        elif "%" in line or "!" in line:
            line = LLIR_LOCAL.sub(sub, line)
        out.add(line, i)
    return out


# ---------------------------------------------------------------- assembly helpers


def _squash(line: str) -> str:
    """Uniform spacing: one level of indent for indented lines, single spaces inside."""
    body = " ".join(line.split())
    return ("    " + body) if line[:1] in (" ", "\t") else body


def _skip_debug_section(lines: list[str], i: int, braces: bool) -> int:
    """Index of the first line after a debug section starting at lines[i]."""
    if braces:  # PTX: `.section .debug_x` then a { ... } block (possibly on the same line)
        depth = lines[i].count("{") - lines[i].count("}")
        j = i + 1
        if depth == 0 and "{" not in lines[i]:
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j].strip().startswith("{"):
                depth = lines[j].count("{") - lines[j].count("}")
                j += 1
        while j < len(lines) and depth > 0:
            depth += lines[j].count("{") - lines[j].count("}")
            j += 1
        return j
    # AMDGCN: up to the next section-changing directive
    j = i + 1
    while j < len(lines):
        s = lines[j].lstrip()
        if (
            s.startswith((".section", ".text", ".data", ".amdgpu_metadata", ".end_amdgpu_metadata"))
            and not s.startswith(".section\t.debug_")
            and not s.startswith(".section .debug_")
        ):
            break
        j += 1
    return j


# ---------------------------------------------------------------- PTX

PTX_REG = re.compile(r"%(rd|rs|rq|r|p|fd|f|hh|h|b)(\d+)\b")
PTX_LABEL = re.compile(r"\$L__[A-Za-z_]+\d+(?:_\d+)?")
PTX_DEBUG_LABEL = re.compile(r"^\$L__(?:tmp|func_begin|func_end|info_string|pubNames|pubTypes)\w*:\s*$")
PTX_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\b")


def ptx(text: str, rename: bool = True) -> Normalized:
    out = Normalized()
    ren = Renamer(rename)

    def reg(m: re.Match) -> str:
        cls = m.group(1)
        return ren.get(m.group(0), cls, lambda n: f"%{cls}{n}")

    def label(m: re.Match) -> str:
        tok = m.group(0)
        found = re.match(r"\$L__([A-Za-z_]+?)\d", tok)
        assert found is not None  # PTX_LABEL's tokens: $L__, letters, digits
        kind = found.group(1)
        return ren.get(tok, "$" + kind, lambda n: f"$L__{kind}{n}")

    lines = _common(text).splitlines()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if not s:
            i += 1
            continue
        if s.startswith(".section") and ".debug_" in s:
            i = _skip_debug_section(lines, i, braces=True)
            continue
        if s.startswith((".loc", ".file")) or PTX_DEBUG_LABEL.match(s):
            i += 1
            continue
        if PTX_FUNC.match(line):
            ren.reset()
        if "%" in line:
            line = PTX_REG.sub(reg, line)
        if "$L__" in line:
            line = PTX_LABEL.sub(label, line)
        out.add(_squash(line), i + 1)
        i += 1
    return out


# ---------------------------------------------------------------- SASS

SASS_ADDR = re.compile(r"/\*[0-9a-fA-F]{4,}\*/")
SASS_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")
SASS_NAME = re.compile(r"(?<![\w.])(UR|UP|R|P|B)(\d+)(?!\w)|\.L_x_\d+")
SASS_FUNC = re.compile(r"^\s*//-+\s*\.text\.")


def sass(text: str, rename: bool = True) -> Normalized:
    out = Normalized()
    ren = Renamer(rename)

    def sub(m: re.Match) -> str:
        cls = m.group(1)
        if cls is None:
            return ren.get(m.group(0), ".L", lambda n: f".L_x_{n}")
        return ren.get(m.group(0), cls, lambda n: f"{cls}{n}")

    for i, line in enumerate(_common(text).splitlines(), 1):
        if not line.strip():
            continue
        if SASS_FUNC.match(line):
            ren.reset()
        if "/*" in line:
            line = SASS_ENCODING.sub("", SASS_ADDR.sub("", line, count=1))
            if not line.strip():
                continue
        line = SASS_NAME.sub(sub, line)
        out.add(_squash(line), i)
    return out


# ---------------------------------------------------------------- AMDGCN

AMD_REG = re.compile(r"(?<![\w.$])([vsa])(?:(\d+)|\[(\d+):(\d+)\])(?![\w\[])")
AMD_LABEL = re.compile(r"\.L(?:BB|tmp|func_begin|func_end)[\w]*")
AMD_DEBUG_LABEL = re.compile(r"^\.L(?:tmp|info_string|line_table_start|cu_begin|debug_\w+)\d*:")
AMD_FUNC = re.compile(r"^[\w.$]+:(?:\s|;|$)")


def amdgcn(text: str, rename: bool = True) -> Normalized:
    out = Normalized()
    ren = Renamer(rename)

    def reg(m: re.Match) -> str:
        cls = m.group(1)
        if m.group(2) is not None:
            return ren.get(m.group(0), cls, lambda n: f"{cls}{n}")
        width = int(m.group(4)) - int(m.group(3)) + 1
        return ren.get(m.group(0), cls, lambda n: f"{cls}[{n}:{n + width - 1}]", width)

    def label(m: re.Match) -> str:
        tok = m.group(0)
        found = re.match(r"\.L([A-Za-z_]+?)(?:\d|$)", tok)
        kind = found.group(1) if found else "L"
        return ren.get(tok, ".L" + kind, lambda n: f".L{kind}{n}")

    lines = _common(text).splitlines()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if not s:
            i += 1
            continue
        if s.startswith(".section") and ".debug_" in s:
            i = _skip_debug_section(lines, i, braces=False)
            continue
        if s.startswith((".loc", ".file")) or AMD_DEBUG_LABEL.match(s):
            i += 1
            continue
        if AMD_FUNC.match(line) and not line.startswith(".L"):
            ren.reset()
        line = AMD_REG.sub(reg, line)
        if ".L" in line:
            line = AMD_LABEL.sub(label, line)
        out.add(_squash(line), i + 1)
        i += 1
    return out


# ---------------------------------------------------------------- other text


def plain(text: str, rename: bool = True) -> Normalized:
    """Trailing spaces and blank lines dropped (Python source, unknown stages)."""
    out = Normalized()
    for i, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if line:
            out.add(line, i)
    return out


def raw(text: str) -> Normalized:
    """The compiler's own text, line for line (--raw)."""
    lines = text.splitlines()
    return Normalized(lines, list(range(1, len(lines) + 1)))


# the normaliser of each stage language (stages.py's `language` column): a new stage in one of these
# languages is normalised by its row alone; binaries and unknown stages get plain
NORMALIZERS: dict[str, Callable[[str, bool], Normalized]] = {
    "mlir": mlir,
    "llvm": llir,
    "ptx": ptx,
    "sass": sass,
    "amdgcn": amdgcn,
    "python": plain,
}


def normalize(stage: str, text: str, enabled: bool = True) -> Normalized:
    if not enabled:
        return raw(text)
    return NORMALIZERS.get(stages.language(stage) or "", plain)(text, True)


def clean(stage: str, text: str) -> Normalized:
    """What normalize drops (locations, debug info, addresses, paths, hashes) dropped, every name kept:
    the lines the aligned diff (align.py) matches, shown with each side's own names."""
    return NORMALIZERS.get(stages.language(stage) or "", plain)(text, False)
