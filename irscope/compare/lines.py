"""A stage's lines as the aligned diff (align.py) compares them: each line's scope and its names.

clean        normalize.clean: locations, debug info, SASS addresses dropped; every name kept
tokenise     each line -> literal pieces and names by kind (MLIR %values, ^blocks and #aliases; LLVM
             %values, labels, !metadata and #attributes; PTX registers by class (%r, %rd, %p, %f, ...)
             and $L__ labels; SASS R/UR/P/UP/B registers and .L_x_ labels; AMDGCN v/s/a registers
             and .L labels); the skeleton is the line with each name replaced by its kind
structure    each line's scope: the function it is in and, for MLIR, the path of region-holding ops
             around it (tt.func/scf.for/...), so a loop body line only ever matches a loop body line and
             a prologue line a prologue line; names are paired per function
registers    machine code (SASS, AMDGCN): a register holds many values, so each write starts a new one
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from irscope import stages
from irscope.compare.normalize import clean

# ---------------------------------------------------------------- tokens

MLIR_TOKEN = re.compile(r"%[\w$.-]+|\^[\w$.-]+|#[A-Za-z_][\w]*(?![\w.<])")
LLVM_TOKEN = re.compile(r'%[\w$.-]+|%"[^"]*"|!\d+|#\d+')
LLVM_LABEL = re.compile(r"^([\w$.-]+|\"[^\"]*\"):")
PTX_TOKEN = re.compile(r"%(?:rd|rs|rq|r|p|fd|f|hh|h|b)\d+\b|\$L__[A-Za-z_]+\d+(?:_\d+)?")
SASS_TOKEN = re.compile(r"(?<![\w.])(?:UR|UP|R|P|B)\d+(?!\w)(?:\.reuse)?|\.L_x_\d+")
AMD_TOKEN = re.compile(r"(?<![\w.$])[vsa](?:\d+|\[\d+:\d+\])(?![\w\[])|\.L(?:BB|tmp|func_begin|func_end)\w*")


MLIR_VALUE_NAMED = re.compile(r"%(c-?\d+_(?:i\d+|index)|true|false)(?:_\d+)?$")


def _mlir_kind(tok: str) -> str:
    """%values, ^blocks, #aliases (by their stem: #blocked1 pairs with a #blocked, never a #mma); a constant
    MLIR names by its value (%c3_i32, %c3_i32_0, %true) is its own kind, so it never pairs with another value."""
    if tok[0] == "%":
        m = MLIR_VALUE_NAMED.match(tok)
        return "%" + m.group(1) if m else "%"
    return "^" if tok[0] == "^" else "#" + tok[1:].rstrip("0123456789")


def _llvm_kind(tok: str) -> str:
    return tok[0]


def _ptx_kind(tok: str) -> str:
    return "$L" if tok[0] == "$" else tok.rstrip("0123456789")


def _sass_kind(tok: str) -> str:
    return ".L" if tok[0] == "." else tok.removesuffix(".reuse").rstrip("0123456789")


def _amd_kind(tok: str) -> str:
    return ".L" if tok[0] == "." else tok[0]


TOKENS: dict[str, tuple[re.Pattern, Callable[[str], str]]] = {
    "mlir": (MLIR_TOKEN, _mlir_kind),
    "llvm": (LLVM_TOKEN, _llvm_kind),
    "ptx": (PTX_TOKEN, _ptx_kind),
    "sass": (SASS_TOKEN, _sass_kind),
    "amdgcn": (AMD_TOKEN, _amd_kind),
}

# a function's start, by language (its name is the scope of its value names)
FUNC_NAME: dict[str, re.Pattern] = {
    "mlir": re.compile(r"^\s*(?:tt\.func|func\.func|llvm\.func|gpu\.func|ttg\.func)\b[^@]*@([\w$.-]+)"),
    "llvm": re.compile(r"^define\b[^@]*@([\w$.-]+|\"[^\"]*\")"),
    "ptx": re.compile(r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)"),
    "sass": re.compile(r"^\s*//-+\s*\.text\.([\w$.]+)"),
    "amdgcn": re.compile(r"^([A-Za-z_][\w$]*):(?:\s|;|$)"),
}
MLIR_OP = re.compile(r"^\s*(?:[%\w$.#:, -]+=\s*)?\"?([A-Za-z_][\w$]*\.[\w$.]+|module|func)\b")


@dataclass
class Line:
    """One line as compared: its own text, where it came from, and its tokens."""

    text: str
    origin: int  # 1-based line in the stage's file
    scope: str  # function and, for MLIR, the region path: "matmul_kernel/scf.for"
    pieces: tuple[str, ...]  # the literal text around the names: len(names) + 1 pieces
    names: tuple[tuple[str, str], ...]  # (kind, name) in order
    # what each name stands for, when that is not the name itself: a machine register (SASS, AMDGCN) holds
    # many values, so each write starts a new value ("R12#3"), and a read is of the last one written
    ident: tuple[str, ...] = ()
    raw: str = ""  # the file's own line (what the stats' patterns read)
    dest: int | None = None  # SASS / AMDGCN: the index of the name this line writes

    def idents(self) -> tuple[str, ...]:
        return self.ident or tuple(n for _, n in self.names)

    @functools.cached_property
    def skeleton(self) -> str:
        out = [self.pieces[0]]
        for (kind, _), piece in zip(self.names, self.pieces[1:]):
            out.append("\x00" + kind + "\x00" + piece)
        return "".join(out)

    @property
    def function(self) -> str:
        return self.scope.split("/", 1)[0]


def tokenise(stage: str, text: str) -> list[Line]:
    """The stage's cleaned lines with their scope and tokens."""
    lang = stages.language(stage) or ""
    norm = clean(stage, text)
    token, kind_of = TOKENS.get(lang, (None, None))
    func_rx = FUNC_NAME.get(lang)
    func, regions = "", list[str]()  # MLIR: the region-holding ops around a line
    versions: dict[str, int] = {}  # SASS / AMDGCN: each register's writes so far in this function
    out: list[Line] = []
    raw = text.splitlines()
    for text_line, origin in zip(norm.lines, norm.origin):
        stripped = text_line.strip()
        if func_rx is not None and (m := func_rx.match(text_line)) and not text_line.startswith(".L"):
            func = m.group(1)
            versions = {}
        if lang == "mlir" and stripped.startswith("}"):
            regions = regions[:-1]
        scope = "/".join([func, *regions])
        pieces, names = _split(text_line, token, kind_of, lang)
        ident, dest = _versioned(lang, pieces, names, versions) if lang in MOVES else ((), None)
        if lang == "llvm" and names and not pieces[0] and names[0][0] == "%" and not names[0][1].startswith("%"):
            ident = ("%" + names[0][1], *(n for _, n in names[1:]))  # a label stands for the block's value
        raw_line = raw[origin - 1] if origin <= len(raw) else ""
        out.append(Line(text_line, origin, scope, pieces, names, ident, raw_line, dest))
        if lang == "mlir" and stripped.endswith("{"):
            op = MLIR_OP.match(text_line)
            regions = regions + [op.group(1) if op else "{"]
    return out


SASS_GUARD = re.compile(r"^\s*@!?$")
OPCODE_THEN_SPACE = re.compile(r"^\s*[A-Za-z_][\w.]*\s+$")
AMD_NO_DEST = (
    "global_store",
    "buffer_store",
    "ds_write",
    "ds_store",
    "flat_store",
    "scratch_store",
    "s_store",
    "s_cbranch",
    "s_branch",
    "s_waitcnt",
    "s_barrier",
    "s_endpgm",
    "s_setprio",
    "s_nop",
    "s_sleep",
    "global_atomic",
    "buffer_atomic",
    "ds_add",
    "s_setpc",
    "s_swappc",
)


def _versioned(lang: str, pieces, names, versions: dict[str, int]) -> tuple[tuple[str, ...], int | None]:
    """Each register read as the value last written to it, the line's destination as a new value.
    The destination is the first operand when it is a bare register (SASS: `IADD3 R4, ...`, never the
    address of `STG [R2.64], R5`; AMDGCN: the same, stores and branches aside)."""
    dest = None
    k = 0
    if lang == "sass" and names and SASS_GUARD.match(pieces[0]):
        k = 1  # `@P0` guards the line: a read
    head = pieces[k]
    if k < len(names) and names[k][0] != ".L" and OPCODE_THEN_SPACE.match(head if k == 0 else head.lstrip()):
        if not (lang == "amdgcn" and head.strip().startswith(AMD_NO_DEST)):
            dest = k
    regs = [n.removesuffix(".reuse") for _, n in names]  # .reuse: the operand cache's hint, not a value
    out = [f"{n}#{versions.get(n, 0)}" if kind != ".L" else n for (kind, _), n in zip(names, regs)]
    if dest is not None:
        n = regs[dest]
        versions[n] = versions.get(n, 0) + 1
        out[dest] = f"{n}#{versions[n]}"
    return tuple(out), dest


def _split(line: str, token, kind_of, lang: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    if token is None:
        return (line,), ()
    pieces: list[str] = []
    names: list[tuple[str, str]] = []
    pos = 0
    if lang == "llvm" and not line.startswith(("define", "declare")) and (m := LLVM_LABEL.match(line)):
        pieces.append("")
        names.append(("%", m.group(1)))  # a block's label, `246:`: the value %246 that branches name
        pos = m.end(1)
    for m in token.finditer(line, pos):
        pieces.append(line[pos : m.start()])
        tok = m.group(0)
        names.append((kind_of(tok), tok))
        pos = m.end()
    pieces.append(line[pos:])
    return tuple(pieces), tuple(names)


# machine code is scheduled: an instruction equal up to the renaming but elsewhere in its function is moved
MOVES = {stages.language(n) for n in stages.names(isa="native")}
