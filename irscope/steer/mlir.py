"""MLIR text, read the way the pins need it: layouts, module attributes, locations and loops.

The pins edit Triton's IR as text (TTIR, TTGIR) between stages, so they need to read it:

    brackets   one scanner for MLIR's brackets (incl. <>) outside "strings": balanced(),
               split_at_word(), matching_close(); split_attrs() splits at top-level commas
    layouts    '#ttg.blocked<{sizePerThread = [4], ...}>' <-> Layout; the module's layout aliases,
               its integer attributes (ttg.num-warps), the ranks of the tensors of one layout
    locations  loc(...) expressions -> the Python (file, line)s they name, through aliases,
               names, call sites and fused locations
    loops      every scf.for of a module, with its attribute dict and its Python lines

Nothing here knows about pins: pins.py, loops.py, layouts.py and checks.py build on it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from irscope.kernel.spec import split_top

OPENING, CLOSING = "([{<", ")]}>"
SHARED_KINDS_SUFFIX = "shared"


# ------------------------------------------------------------------ brackets


def _scan(text: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth after it) for each character outside "strings".

    MLIR quotes with double quotes only; '<' and '>' count as brackets (as in !tt.ptr<f16>).
    """
    depth, quote = 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quote = not quote
            continue
        if quote:
            continue
        if ch in OPENING:
            depth += 1
        elif ch in CLOSING:
            depth -= 1
        yield i, ch, depth


def balanced(text: str) -> bool:
    """Every bracket closed in order, and every string closed."""
    depth = 0
    for _, _, depth in _scan(text):
        if depth < 0:
            return False
    return depth == 0 and text.count('"') % 2 == 0


def split_at_word(text: str, word: str) -> list[str]:
    """Split at the first `word` outside brackets and strings: 'a at b' -> ['a', 'b']."""
    for i, ch, depth in _scan(text):
        if depth == 0 and ch not in OPENING + CLOSING and text.startswith(word, i):
            return [text[:i], text[i + len(word) :]]
    return [text]


def matching_close(text: str) -> int:
    """The index of the bracket that closes the one `text` starts with (the last index if none does)."""
    return next((i for i, ch, depth in _scan(text) if depth == 0 and ch in CLOSING), len(text) - 1)


def split_attrs(text: str, seps: str = ",") -> list[str]:
    """Split MLIR attribute text at separators outside brackets (incl. <>) and quotes; empty items dropped."""
    return [p.strip() for p in split_top(text, seps, OPENING, CLOSING) if p.strip()]


def squash(text: str) -> str:
    """The text without whitespace, to compare attributes however they are printed."""
    return re.sub(r"\s+", "", text)


# ------------------------------------------------------------------ layouts


@dataclass
class Layout:
    """'#ttg.blocked<{sizePerThread = [4], ...}>' split into its kind and ordered fields."""

    dialect: str  # 'ttg'
    kind: str  # 'blocked'
    fields: dict[str, str]  # name -> MLIR text of the value
    braced: bool  # '<{...}>' (most) or '<...>' (e.g. ttng.tensor_memory_encoding)
    raw: str = ""

    @property
    def shared(self) -> bool:
        """A shared-memory layout (as opposed to a register, distributed, one)."""
        return self.kind.endswith(SHARED_KINDS_SUFFIX)

    def text(self) -> str:
        """The attribute's text, fields in order."""
        body = ", ".join(f"{k} = {v}" for k, v in self.fields.items())
        return f"#{self.dialect}.{self.kind}<{{{body}}}>" if self.braced else f"#{self.dialect}.{self.kind}<{body}>"

    def value(self, name: str) -> Any:
        """A field's value as Python data (mlir_value), None when the layout lacks the field."""
        return mlir_value(self.fields[name]) if name in self.fields else None


def parse_layout(text: str) -> Layout | None:
    """A layout attribute's text -> Layout (fields empty when its body is not `key = value`s); None if not one."""
    m = re.fullmatch(r"\s*#(\w+)\.(\w+)<(.*)>\s*", text, re.S)
    if not m:
        return None
    body = m.group(3).strip()
    braced = body.startswith("{") and body.endswith("}")
    if braced:
        body = body[1:-1]
    fields: dict[str, str] = {}
    for item in split_attrs(body):
        key, sep, val = item.partition("=")
        if not sep:
            return Layout(m.group(1), m.group(2), {}, braced, text.strip())  # not key = value: opaque
        fields[key.strip()] = val.strip()
    return Layout(m.group(1), m.group(2), fields, braced, text.strip())


def mlir_value(text: str) -> Any:
    """'[1, 8]' -> [1, 8]; '4' -> 4; 'true' -> True; anything else stays text."""
    t = text.strip()
    if re.fullmatch(r"[\[\]\d\s,-]+", t) or t in ("true", "false"):
        try:
            return ast.literal_eval(t.replace("true", "True").replace("false", "False"))
        except (ValueError, SyntaxError):
            return t
    return t


def mlir_text(v: Any) -> str:
    """[1, 8] -> '[1, 8]'; True -> 'true'; 4 -> '4' (the inverse of mlir_value)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(mlir_text(x) for x in v) + "]"
    return str(v)


_ALIAS_DEF = re.compile(r"^#(?!loc)([\w.$-]+) = (#\w+\.\w+<.*>)\s*$", re.M)


def layout_aliases(ttgir: str) -> dict[str, str]:
    """alias (without '#') -> its attribute text, for the layout aliases at the top of a TTGIR module."""
    return {m.group(1): m.group(2) for m in _ALIAS_DEF.finditer(ttgir)}


def module_int_attr(ir_text: str, name: str) -> int | None:
    """An i32 attribute of the module (`ttg.num-warps = 4 : i32`), else None."""
    m = re.search(r'"?' + re.escape(name) + r'"?\s*=\s*(\d+)\s*:\s*i32', ir_text)
    return int(m.group(1)) if m else None


def tensor_ranks(ttgir: str, alias: str) -> set[int]:
    """Ranks of the tensors whose encoding is #alias (tensor<128x64x!tt.ptr<f16>, #blocked>)."""
    rx = re.compile(r"tensor<(\d+(?:x\d+)*)x(?:[^<>,]|<[^<>]*>)*,\s*#" + re.escape(alias) + r">")
    return {m.group(1).count("x") + 1 for m in rx.finditer(ttgir)}


# ------------------------------------------------------------------ locations -> Python lines


_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$", re.M)


def loc_table(ir_text: str) -> dict[str, str]:
    """'#loc3' -> what it stands for, from the location aliases at the end of a module."""
    return {m.group(1): m.group(2) for m in _LOC_DEF.finditer(ir_text)}


def loc_lines(expr: str, table: dict[str, str], depth: int = 0) -> list[tuple[str, int]]:
    """Every (file, line) a location names: through aliases, names, call sites and fused locations.

    The callee comes before the caller, so [0] is where the op itself was written.
    """
    e = expr.strip()
    if depth > 64 or not e:
        return []
    if e.startswith("loc(") and e.endswith(")"):
        return loc_lines(e[4:-1], table, depth + 1)
    if e.startswith("#loc"):
        return loc_lines(table.get(e, ""), table, depth + 1)
    if e == "unknown":
        return []
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?:\s+to\s+.*)?', e, re.S)
    if m:
        return [(m.group(1), int(m.group(2)))]
    if e.startswith("callsite(") and e.endswith(")"):
        out = []
        for p in split_at_word(e[len("callsite(") : -1], " at "):
            out += loc_lines(p, table, depth + 1)
        return out
    if e.startswith("fused"):
        i = e.find("[")
        if i != -1 and e.endswith("]"):
            out = []
            for p in split_attrs(e[i + 1 : -1]):
                out += loc_lines(p, table, depth + 1)
            return out
        return []
    m = re.fullmatch(r'"(?:[^"\\]|\\.)*"\((.*)\)', e, re.S)  # a name location: "acc"(#loc12)
    if m:
        return loc_lines(m.group(1), table, depth + 1)
    return []


# ------------------------------------------------------------------ loops


_FOR = re.compile(r"^(\s*)(?:%[^=]+= )?scf\.for\b")


@dataclass
class Loop:
    """One scf.for of a module: where it is, its attribute dict, and the Python lines it came from."""

    start: int  # index of the 'scf.for' line
    end: int  # index of its closing '}' line
    indent: str
    attrs: dict[str, str | None]  # attribute -> value text (None: a unit attribute)
    loc: str
    lines: list[tuple[str, int]]  # the Python (file, line)s its location names

    def attr_value(self, attr: str) -> Any:
        """An attribute's value: an integer, True for a unit attribute, None when absent, else text."""
        if attr not in self.attrs:
            return None
        v = self.attrs[attr]
        if v is None:
            return True
        m = re.match(r"\s*(-?\d+)", v)
        return int(m.group(1)) if m else v

    def closing_text(self) -> str:
        """The loop's closing line, as MLIR prints it: '} {attrs} loc(...)'."""
        body = ", ".join(k if v is None else f"{k} = {v}" for k, v in sorted(self.attrs.items()))
        parts = [self.indent + "}"] + ([f"{{{body}}}"] if body else []) + ([self.loc] if self.loc else [])
        return " ".join(parts)


def find_loops(ir_text: str) -> list[Loop]:
    """Every scf.for of the module, in the order they start."""
    lines = ir_text.split("\n")
    table = loc_table(ir_text)
    loops = []
    for i, line in enumerate(lines):
        m = _FOR.match(line)
        if not m or not line.rstrip().endswith("{"):
            continue
        indent = m.group(1)
        close = indent + "}"
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(close) and (len(lines[j]) == len(close) or lines[j][len(close)] == " "):
                break
        else:
            continue
        attrs, loc = _closing(lines[j][len(close) :])
        loops.append(Loop(i, j, indent, attrs, loc, loc_lines(loc, table) if loc else []))
    return loops


def _closing(rest: str) -> tuple[dict[str, str | None], str]:
    """' {tt.num_stages = 4 : i32} loc(#loc4)' -> ({'tt.num_stages': '4 : i32'}, 'loc(#loc4)')."""
    r = rest.strip()
    attrs: dict[str, str | None] = {}
    if r.startswith("{"):
        k = matching_close(r)
        for item in split_attrs(r[1:k]):
            key, sep, val = item.partition("=")
            attrs[key.strip()] = val.strip() if sep else None
        r = r[k + 1 :].strip()
    return attrs, r
