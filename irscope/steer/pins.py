"""Pins: steer the compiler at one loop or one layout, and check the output obeyed.

Three kinds of pin, reachable from a recipe (recipes.py) and from the command line:

  loop     `--pin-loop 'LINE:num_stages=4'`, `'FILE:LINE:...'`, `'*:...'` (every loop).
           Sets the per-loop attributes `tl.range(...)` would set (tt.num_stages,
           tt.loop_unroll_factor, tt.warp_specialize, tt.flatten,
           tt.disallow_acc_multi_buffer) on the `scf.for` whose location is that
           Python line, in TTIR. The TTGIR pipeline then runs on the edited TTIR, so
           the compiler's own passes (pipeliner, warp specialization) honour it.
  layout   `--pin-layout 'blocked=#ttg.blocked<{...}>'` replaces the layout an alias
           of the TTGIR names; `--pin-layout 'blocked:sizePerThread=[1]'` edits one
           field (several: `blocked:sizePerThread=[1];order=[0]`). The result must
           obey the rules checked here (ranks, warp size, num_warps, order) and the
           MLIR parser/verifier; the later stages then compile from the edited TTGIR.
  constexpr  a recipe's constexpr values (Gluon layouts included); they become part
           of the specialization and are checked against the TTGIR where possible.

How the compiler uses this (compiler.compile_spec): `plan(spec, settings)` says
which IR stages to edit; the compile stops after each such stage, the text is
rewritten here, written to a file and compiled onward with triton.compile(file);
the stages are merged. After the compile, `Plan.check(art)` confirms every pin
(and every option set by a recipe or --set) in the output and returns the records
kept in manifest["pins"]: {kind, name, value, source, status, detail}, where
status is "ok", "no effect", "changed", "overridden" (a later pin of the same
key, or the command line, wins), "not applicable" (a recipe default that does
not fit this kernel) or "unchecked".

Errors in pins are BadInput (exit 2, nothing written): a malformed pin, a loop
line with no loop, an alias the TTGIR lacks, an illegal layout. A recipe's
default-table pin (optional=True) that finds no loop, alias or field is skipped
instead: the defaults apply to every kernel, and not every kernel has them.
"""

from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from irscope.core.settings import parse_bool
from irscope.core.spec import split_top
from irscope.errors import BadInput, did_you_mean

# per-loop attributes: pin name -> (TTIR attribute, type)
LOOP_ATTRS: dict[str, tuple[str, type]] = {
    "num_stages": ("tt.num_stages", int),
    "loop_unroll_factor": ("tt.loop_unroll_factor", int),
    "warp_specialize": ("tt.warp_specialize", bool),
    "flatten": ("tt.flatten", bool),
    "disallow_acc_multi_buffer": ("tt.disallow_acc_multi_buffer", bool),
}

# every field name a TTGIR layout attribute prints (3.5-3.9); a recipe's field edit must use one of them
LAYOUT_FIELDS = (
    "sizePerThread", "threadsPerWarp", "warpsPerCTA", "order", "CGALayout", "CTAsPerCGA", "CTASplitNum",
    "CTAOrder", "versionMajor", "versionMinor", "instrShape", "version", "isTransposed", "tilesPerWarp",
    "elementBitWidth", "dim", "parent", "opIdx", "kWidth", "vec", "perPhase", "maxPhase", "swizzlingByteWidth",
    "transposed", "fp4Padded", "register", "lane", "warp", "block", "blockM", "blockN", "colStride",
    "unpacked", "CTASplitM", "CTASplitN", "isBlockScale", "twoCTAs", "offset", "alignment", "isSigned",
)
SHARED_KINDS_SUFFIX = "shared"


# ------------------------------------------------------------------ the pins


@dataclass(frozen=True)
class LoopPin:
    file: str | None            # None: the kernel's own file
    line: int | None            # None: every loop ('*')
    attrs: tuple[tuple[str, Any], ...]
    source: str
    optional: bool = False      # a recipe default: skipped, not refused, where no loop is at the line

    @property
    def where(self) -> str:
        line = "*" if self.line is None else str(self.line)
        return f"{self.file}:{line}" if self.file else line

    def text(self) -> str:
        return f"{self.where}:" + ",".join(f"{k}={_py_text(v)}" for k, v in self.attrs)


@dataclass(frozen=True)
class LayoutPin:
    alias: str                  # without '#'
    value: str | None           # full replacement, '#ttg.blocked<{...}>'
    fields: tuple[tuple[str, str], ...]   # field -> MLIR text of its new value
    source: str
    optional: bool = False      # a recipe default: skipped, not refused, where the alias or a field is missing

    def text(self) -> str:
        if self.value is not None:
            return f"{self.alias}={self.value}"
        return f"{self.alias}:" + ";".join(f"{k}={v}" for k, v in self.fields)


@dataclass(frozen=True)
class ConstPin:
    name: str
    text: str                   # what spec.parse_value reads back (e.g. 'gl.BlockedLayout(...)', '128')
    source: str


@dataclass
class Pins:
    """Everything beyond plain options and env knobs that a recipe or the command line pinned."""

    loops: list[LoopPin] = field(default_factory=list)
    layouts: list[LayoutPin] = field(default_factory=list)
    constexprs: dict[str, ConstPin] = field(default_factory=dict)
    recipe: dict[str, Any] | None = None      # {"name", "path", "variant"} when a recipe was applied
    overridden: dict[str, str] = field(default_factory=dict)   # constexpr -> what the command line gave

    def __bool__(self) -> bool:
        return bool(self.loops or self.layouts or self.constexprs or self.recipe)

    def plan(self, spec, settings) -> Plan:
        """The stage edits and output checks of one compile (the PinSet protocol core.compiler calls)."""
        return plan(spec, settings)

    def canonical(self) -> dict[str, Any]:
        """What decides the output (and irscope's cache key)."""
        return {
            "loops": [[p.where, [[k, v] for k, v in p.attrs]] for p in self.loops],
            "layouts": [[p.alias, p.value, [list(f) for f in p.fields]] for p in self.layouts],
            "constexprs": {k: v.text for k, v in sorted(self.constexprs.items())},
            "recipe": self.recipe,
            "sources": [p.source for p in self.loops] + [p.source for p in self.layouts]
                       + [v.source for _, v in sorted(self.constexprs.items())],
        }


# ------------------------------------------------------------------ parsing pins


def loop_attr_value(name: str, value: Any, where: str) -> Any:
    """Check one per-loop attribute and its value (TOML-typed or text)."""
    if name not in LOOP_ATTRS:
        raise BadInput(f"{where}: {name!r} is not a per-loop attribute{did_you_mean(name, LOOP_ATTRS)}; "
                       f"valid: {', '.join(LOOP_ATTRS)}")
    typ = LOOP_ATTRS[name][1]
    if isinstance(value, str):
        low = value.strip().lower()
        if typ is bool and parse_bool(low) is not None:
            return parse_bool(low)
        if typ is int:
            try:
                value = int(low, 0)
            except ValueError:
                pass
    if typ is bool and not isinstance(value, bool):
        raise BadInput(f"{where}: {name} takes true or false, not {value!r}")
    if typ is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadInput(f"{where}: {name} takes an integer, not {value!r}")
    if typ is int and not 1 <= value < 2**31:
        raise BadInput(f"{where}: {name} must be from 1 to {2**31 - 1} (an i32 attribute), not {value}")
    return value


_LOOP_PIN = re.compile(r"^(?:(?P<file>.+?):)?(?P<line>\d+|\*):(?P<attrs>[^:]+)$")


def parse_loop_where(where: str, origin: str) -> tuple[str | None, int | None]:
    """'33' -> (None, 33); 'examples/softmax.py:15' -> (file, 15); '*' -> (None, None)."""
    text = where.strip()
    file, _, line = text.rpartition(":")
    if not line.strip():
        raise BadInput(f"{origin}: {where!r}: expected LINE, FILE:LINE or '*'")
    line = line.strip()
    if line == "*":
        return (file.strip() or None), None
    if not line.isdigit() or int(line) < 1:
        raise BadInput(f"{origin}: {where!r}: expected a line number (e.g. 33), FILE:LINE or '*'")
    return (file.strip() or None), int(line)


def parse_pin_loop(text: str, source: str = "--pin-loop") -> LoopPin:
    """'33:num_stages=4', 'examples/softmax.py:15:num_stages=1,loop_unroll_factor=2', '*:num_stages=2'."""
    m = _LOOP_PIN.match(text.strip())
    if not m:
        raise BadInput(f"{source} {text!r}: expected LINE:KEY=VALUE[,KEY=VALUE], e.g. '33:num_stages=4' or "
                       f"'examples/softmax.py:15:num_stages=1' ('*' for every loop); keys: {', '.join(LOOP_ATTRS)}")
    file, line = m.group("file"), m.group("line")
    attrs = []
    for item in m.group("attrs").split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            if key in LOOP_ATTRS and LOOP_ATTRS[key][1] is bool:
                raw = "true"
            else:
                raise BadInput(f"{source} {text!r}: {item.strip()!r} is not KEY=VALUE")
        attrs.append((key, loop_attr_value(key, raw, f"{source} {text!r}")))
    return LoopPin(file, None if line == "*" else int(line), tuple(attrs), source)


_ALIAS = re.compile(r"^#?([A-Za-z_][\w.$-]*)$")


def parse_pin_layout(text: str, source: str = "--pin-layout") -> LayoutPin:
    """'blocked=#ttg.blocked<{...}>' (replace) or 'blocked:sizePerThread=[1];order=[0]' (edit fields)."""
    t = text.strip()
    eq, colon = t.find("="), t.find(":")
    if colon != -1 and (eq == -1 or colon < eq):
        alias, _, rest = t.partition(":")
        _alias_name(alias, source, text)
        fields = []
        for item in _split_top(rest, ";,"):
            key, sep, raw = item.partition("=")
            if not sep or not key.strip():
                raise BadInput(f"{source} {text!r}: {item.strip()!r} is not FIELD=VALUE (e.g. sizePerThread=[1])")
            fields.append(layout_field(key.strip(), raw.strip(), f"{source} {text!r}"))
        if not fields:
            raise BadInput(f"{source} {text!r}: no field given (e.g. blocked:sizePerThread=[1])")
        return LayoutPin(_alias_name(alias, source, text), None, tuple(fields), source)
    alias, sep, value = t.partition("=")
    if not sep:
        raise BadInput(f"{source} {text!r}: expected ALIAS=#ttg.KIND<{{...}}> or ALIAS:FIELD=VALUE, e.g. "
                       f"'blocked=#ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
                       f"order = [0]}}>' or 'blocked:sizePerThread=[1]'")
    return LayoutPin(_alias_name(alias, source, text), layout_value(value, f"{source} {text!r}"), (), source)


def _alias_name(alias: str, source: str, whole: str) -> str:
    m = _ALIAS.match(alias.strip())
    if not m or m.group(1).startswith("loc"):
        raise BadInput(f"{source} {whole!r}: {alias.strip()!r} is not a layout alias of the TTGIR (e.g. blocked, "
                       f"blocked1, mma, shared)")
    return m.group(1)


def layout_value(value: str, where: str) -> str:
    """A full layout attribute, '#ttg.blocked<{...}>' (the leading '#' may be left out)."""
    v = value.strip()
    if not v.startswith("#"):
        v = "#" + v
    if not re.fullmatch(r"#\w+\.\w+<.*>", v, re.S):
        raise BadInput(f"{where}: {value.strip()!r} is not a layout attribute; expected e.g. "
                       f"#ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>")
    if not _balanced(v):
        raise BadInput(f"{where}: {value.strip()!r}: unbalanced brackets")
    return v


def layout_field(name: str, value: Any, where: str) -> tuple[str, str]:
    """One field edit; value is TOML data (list, int, bool) or text ('[1]', '#blocked')."""
    if name not in LAYOUT_FIELDS:
        raise BadInput(f"{where}: {name!r} is not a field of a TTGIR layout{did_you_mean(name, LAYOUT_FIELDS)}; "
                       f"e.g. sizePerThread, threadsPerWarp, warpsPerCTA, order, instrShape")
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = ast.literal_eval(text.replace("true", "True").replace("false", "False"))
        except (ValueError, SyntaxError):
            if not text or not _balanced(text):
                raise BadInput(f"{where}: {name}={value!r} is not a value (e.g. [1, 8], 4, true)") from None
            return name, text
        value = parsed
    return name, _mlir_text(value)


def _mlir_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_mlir_text(x) for x in v) + "]"
    return str(v)


def _py_text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


# ------------------------------------------------------------------ MLIR text helpers


def _balanced(text: str) -> bool:
    depth, quote = 0, False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{<":
            depth += 1
        elif not quote and ch in ")]}>":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and not quote


def _split_top(text: str, seps: str = ",") -> list[str]:
    """Split MLIR attribute text at separators outside brackets (incl. <>) and quotes; empty items dropped."""
    return [p.strip() for p in split_top(text, seps, "([{<", ")]}>") if p.strip()]


@dataclass
class Layout:
    """'#ttg.blocked<{sizePerThread = [4], ...}>' split into its kind and ordered fields."""

    dialect: str                # 'ttg'
    kind: str                   # 'blocked'
    fields: dict[str, str]      # name -> MLIR text of the value
    braced: bool                # '<{...}>' (most) or '<...>' (e.g. ttng.tensor_memory_encoding)
    raw: str = ""

    @property
    def shared(self) -> bool:
        return self.kind.endswith(SHARED_KINDS_SUFFIX)

    def text(self) -> str:
        body = ", ".join(f"{k} = {v}" for k, v in self.fields.items())
        return f"#{self.dialect}.{self.kind}<{{{body}}}>" if self.braced else f"#{self.dialect}.{self.kind}<{body}>"

    def value(self, name: str) -> Any:
        return mlir_value(self.fields[name]) if name in self.fields else None


def parse_layout(text: str) -> Layout | None:
    m = re.fullmatch(r"\s*#(\w+)\.(\w+)<(.*)>\s*", text, re.S)
    if not m:
        return None
    body = m.group(3).strip()
    braced = body.startswith("{") and body.endswith("}")
    if braced:
        body = body[1:-1]
    fields: dict[str, str] = {}
    for item in _split_top(body):
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


_ALIAS_DEF = re.compile(r"^#(?!loc)([\w.$-]+) = (#\w+\.\w+<.*>)\s*$", re.M)


def layout_aliases(ttgir: str) -> dict[str, str]:
    """alias (without '#') -> its attribute text, for the layout aliases at the top of a TTGIR module."""
    return {m.group(1): m.group(2) for m in _ALIAS_DEF.finditer(ttgir)}


def module_int_attr(ir_text: str, name: str) -> int | None:
    m = re.search(r'"?' + re.escape(name) + r'"?\s*=\s*(\d+)\s*:\s*i32', ir_text)
    return int(m.group(1)) if m else None


def _tensor_ranks(ttgir: str, alias: str) -> set[int]:
    """Ranks of the tensors whose encoding is #alias (tensor<128x64x!tt.ptr<f16>, #blocked>)."""
    rx = re.compile(r"tensor<(\d+(?:x\d+)*)x(?:[^<>,]|<[^<>]*>)*,\s*#" + re.escape(alias) + r">")
    return {m.group(1).count("x") + 1 for m in rx.finditer(ttgir)}


# ------------------------------------------------------------------ locations -> Python lines


_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$", re.M)


def loc_table(ir_text: str) -> dict[str, str]:
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
        inner = e[len("callsite("):-1]
        parts = _split_at_word(inner, " at ")
        out = []
        for p in parts:
            out += loc_lines(p, table, depth + 1)
        return out
    if e.startswith("fused"):
        i = e.find("[")
        if i != -1 and e.endswith("]"):
            out = []
            for p in _split_top(e[i + 1:-1]):
                out += loc_lines(p, table, depth + 1)
            return out
        return []
    m = re.fullmatch(r'"(?:[^"\\]|\\.)*"\((.*)\)', e, re.S)   # a name location: "acc"(#loc12)
    if m:
        return loc_lines(m.group(1), table, depth + 1)
    return []


def _split_at_word(text: str, word: str) -> list[str]:
    depth, quote = 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{<":
            depth += 1
        elif not quote and ch in ")]}>":
            depth -= 1
        elif not quote and depth == 0 and text.startswith(word, i):
            return [text[:i], text[i + len(word):]]
    return [text]


# ------------------------------------------------------------------ loops in TTIR


_FOR = re.compile(r"^(\s*)(?:%[^=]+= )?scf\.for\b")


@dataclass
class Loop:
    start: int                  # index of the 'scf.for' line
    end: int                    # index of its closing '}' line
    indent: str
    attrs: dict[str, str | None]   # attribute -> value text (None: a unit attribute)
    loc: str
    lines: list[tuple[str, int]]   # the Python (file, line)s its location names

    def attr_value(self, attr: str) -> Any:
        if attr not in self.attrs:
            return None
        v = self.attrs[attr]
        if v is None:
            return True
        m = re.match(r"\s*(-?\d+)", v)
        return int(m.group(1)) if m else v


def find_loops(ir_text: str) -> list[Loop]:
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
        attrs, loc = _closing(lines[j][len(close):])
        loops.append(Loop(i, j, indent, attrs, loc, loc_lines(loc, table) if loc else []))
    return loops


def _closing(rest: str) -> tuple[dict[str, str | None], str]:
    """' {tt.num_stages = 4 : i32} loc(#loc4)' -> ({'tt.num_stages': '4 : i32'}, 'loc(#loc4)')."""
    r = rest.strip()
    attrs: dict[str, str | None] = {}
    if r.startswith("{"):
        depth = 0
        for k, ch in enumerate(r):
            depth += ch in "{[(<"
            depth -= ch in "}])>"
            if depth == 0:
                break
        for item in _split_top(r[1:k]):
            key, sep, val = item.partition("=")
            attrs[key.strip()] = val.strip() if sep else None
        r = r[k + 1:].strip()
    return attrs, r


def _closing_text(loop: Loop) -> str:
    body = ", ".join(k if v is None else f"{k} = {v}" for k, v in sorted(loop.attrs.items()))
    parts = [loop.indent + "}"] + ([f"{{{body}}}"] if body else []) + ([loop.loc] if loop.loc else [])
    return " ".join(parts)


def same_file(a: str, b: str) -> bool:
    if not a or not b:
        return False
    if os.path.basename(a) != os.path.basename(b):
        return False
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
    except OSError:
        pass
    return a.endswith("/" + b.lstrip("./")) or b.endswith("/" + a.lstrip("./")) or a == b


def loop_matches(pin: LoopPin, loop: Loop, kernel_file: str) -> bool:
    if pin.line is None:
        return pin.file is None or any(same_file(f, pin.file) for f, _ in loop.lines)
    want = pin.file or kernel_file
    return any(line == pin.line and same_file(f, want) for f, line in loop.lines)


def rewrite_loops(ttir: str, pins: list[LoopPin], kernel: str, kernel_file: str) -> tuple[str, list[dict]]:
    """Set each pin's attributes on its loops; returns the new TTIR and what was done per pin."""
    lines = ttir.split("\n")
    loops = find_loops(ttir)
    done = []
    for pin in pins:
        hit = [lp for lp in loops if loop_matches(pin, lp, kernel_file)]
        if not hit and pin.line is not None:
            starts = sorted({ln for lp in loops for f, ln in lp.lines[:1]})
            where = f"{os.path.basename(pin.file or kernel_file)}:{pin.line}"
            have = (f"its loops are at line{'s' if len(starts) > 1 else ''} {', '.join(map(str, starts))}"
                    if starts else "it has no scf.for loop")
            if pin.optional:
                done.append({"pin": pin, "loops": [], "skipped": f"no loop of {kernel} starts at {where}; {have}"})
                continue
            raise BadInput(f"{pin.source} {pin.text()}: no loop of {kernel} starts at {where}; {have}")
        for lp in hit:
            for name, value in pin.attrs:
                attr = LOOP_ATTRS[name][0]
                if LOOP_ATTRS[name][1] is bool:
                    if value:
                        lp.attrs[attr] = None
                    else:
                        lp.attrs.pop(attr, None)
                else:
                    lp.attrs[attr] = f"{value} : i32"
            lines[lp.end] = _closing_text(lp)
        done.append({"pin": pin, "loops": [lp.lines[0] if lp.lines else ("?", 0) for lp in hit]})
    return "\n".join(lines), done


# ------------------------------------------------------------------ layouts in TTGIR


def check_layout_rules(alias: str, old: Layout, new: Layout, ttgir: str, warp_size: int) -> None:
    """The rules a layout must obey, checked before the MLIR parser sees it (plain words, exit 2)."""
    name = f"#{alias}"
    if old.shared != new.shared:
        what = ("a shared-memory layout" if old.shared else "a register (distributed) layout")
        raise BadInput(f"{name} is {what}; it cannot become #{new.dialect}.{new.kind}")
    num_warps = module_int_attr(ttgir, "ttg.num-warps")
    warp_size = module_int_attr(ttgir, "ttg.threads-per-warp") or warp_size
    lists = {k: new.value(k) for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")
             if isinstance(new.value(k), list)}
    for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order", "instrShape"):
        v = new.value(k)
        if k in new.fields and not (isinstance(v, list) and all(isinstance(x, int) for x in v)):
            raise BadInput(f"{k} must be a list of integers, e.g. [1, 8]; got {new.fields[k]}")
    if len({len(v) for v in lists.values()}) > 1:
        got = ", ".join(f"{k} has {len(v)}" for k, v in lists.items())
        raise BadInput(f"{', '.join(lists)} must all have the same rank ({got})")
    rank = len(next(iter(lists.values()))) if lists else None
    old_rank = next((len(old.value(k)) for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")
                     if isinstance(old.value(k), list)), None)
    used = _tensor_ranks(ttgir, alias)
    want = next(iter(used)) if len(used) == 1 else old_rank
    if rank is not None and want is not None and rank != want and not new.shared:
        raise BadInput(f"rank {rank} does not match the rank-{want} tensors that use {name} "
                       f"(give {want} entries per field)")
    for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA"):
        v = lists.get(k)
        if v is not None and any(x < 1 or x & (x - 1) for x in v):
            raise BadInput(f"every entry of {k} must be a power of two (1, 2, 4, ...); got {v}")
    tpw = lists.get("threadsPerWarp")
    if tpw is not None and math.prod(tpw) != warp_size:
        raise BadInput(f"threadsPerWarp {tpw} multiplies to {math.prod(tpw)}, but the product "
                       f"must equal the warp size, {warp_size} threads on this target")
    wpc = new.value("warpsPerCTA")
    if isinstance(wpc, list) and num_warps is not None and math.prod(wpc) != num_warps:
        raise BadInput(f"warpsPerCTA {wpc} multiplies to {math.prod(wpc)}, but the product "
                       f"must equal num_warps, {num_warps} for this compile (ttg.num-warps)")
    order = lists.get("order")
    if order is not None and sorted(order) != list(range(len(order))):
        raise BadInput(f"order {order} must be a permutation of 0..{len(order) - 1} "
                       f"(each dimension once, fastest-varying first)")
    _check_mma_rules(new)


def _check_mma_rules(new: Layout) -> None:
    """NVIDIA MMA layouts: what the hardware instruction fixes (Triton only asserts these in debug builds).

    v2 (mma.sync, sm80+): instrShape [16, 8]. v3 (wgmma, sm90): the 4 warps of a warpgroup stack
    along M, so warpsPerCTA[0] is a multiple of 4, and instrShape's M is 16.
    """
    if new.kind != "nvidia_mma":
        return
    major = new.value("versionMajor")
    shape, wpc = new.value("instrShape"), new.value("warpsPerCTA")
    if major == 2 and isinstance(shape, list) and shape != [16, 8]:
        raise BadInput(f"an mma.sync layout (versionMajor = 2) has instrShape [16, 8], not {shape}")
    if major == 3:
        if isinstance(wpc, list) and wpc and wpc[0] % 4:
            raise BadInput(f"a wgmma layout (versionMajor = 3) stacks the 4 warps of a warpgroup along M: "
                           f"warpsPerCTA[0] must be a multiple of 4, not {wpc}")
        if isinstance(shape, list) and shape and shape[0] != 16:
            raise BadInput(f"a wgmma layout (versionMajor = 3) has instrShape M = 16, not {shape}")


def apply_layout_pins(ttgir: str, pins: list[LayoutPin], warp_size: int) -> tuple[str, list[dict]]:
    """Replace or edit the pinned aliases' layouts; checks the rules (the parser check is the caller's)."""
    aliases = layout_aliases(ttgir)
    current = dict(aliases)
    done = []
    for pin in pins:
        misfit = _layout_misfit(pin, current)
        if misfit and pin.optional:
            done.append({"pin": pin, "alias": pin.alias, "skipped": misfit})
            continue
        if misfit:
            raise BadInput(f"{pin.source} {pin.text()}: {misfit}")
        old = parse_layout(current[pin.alias])
        if pin.value is not None:
            new = parse_layout(pin.value)
            if new is None:
                raise BadInput(f"{pin.source} {pin.text()}: not a layout attribute")
        else:
            new = Layout(old.dialect, old.kind, dict(old.fields), old.braced)
            new.fields.update(pin.fields)
        if old is not None:
            try:
                check_layout_rules(pin.alias, old, new, ttgir, warp_size)
            except BadInput as e:
                raise BadInput(f"{pin.source} {pin.text()}: illegal layout: {e}") from None
        text = new.text() if pin.value is None else pin.value
        before, current[pin.alias] = current[pin.alias], text
        done.append({"pin": pin, "alias": pin.alias, "before": before, "after": text})
    out = ttgir
    for alias, text in current.items():
        if text != aliases[alias]:
            out = re.sub(r"^#" + re.escape(alias) + r" = .*$", lambda _m: f"#{alias} = {text}", out, count=1,
                         flags=re.M)
    if out != ttgir:
        out = drop_layout_hints(out)
    return out, done


def _layout_misfit(pin: LayoutPin, current: dict[str, str]) -> str | None:
    """Why the pin does not fit this kernel's TTGIR (no such alias, or no such field), else None."""
    if pin.alias not in current:
        return (f"the TTGIR has no layout #{pin.alias}{did_you_mean(pin.alias, current)}; its layouts: "
                f"{', '.join('#' + a for a in current) or 'none'}")
    if pin.value is not None:
        return None
    old = parse_layout(current[pin.alias])
    if old is None or not old.fields:
        return f"#{pin.alias} = {current[pin.alias]} has no fields to edit; replace it whole with {pin.alias}=#..."
    for k, _ in pin.fields:
        if k not in old.fields:
            return (f"#{pin.alias} ({old.kind}) has no field {k!r}{did_you_mean(k, old.fields)}; "
                    f"its fields: {', '.join(old.fields)}")
    return None


CONTIGUITY_HINT = re.compile(r" \{contiguity = \d+ : i32\}|contiguity = \d+ : i32, |, contiguity = \d+ : i32")


def drop_layout_hints(ttgir: str) -> str:
    """Remove the `contiguity` hints the TTGIR passes derived from the layouts before the pin.

    Loads and async copies carry them (ttg.async_copy_global_to_local in 3.6+, amdg.buffer_load in
    3.9) and the lowering trusts them: a layout pinned to fewer elements per thread would still be
    lowered to the old vector width, reading elements the new layout does not give the thread (seen
    on gfx942 with 3.9: buffer_load_dwordx4 under sizePerThread = [1]). Without the hint the lowering
    recomputes contiguity from the IR, which gives the same code where nothing was pinned (checked:
    the matmul's cp.async sizes and counts on sm80, 3.6 and 3.9).
    """
    return CONTIGUITY_HINT.sub("", ttgir)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ------------------------------------------------------------------ the plan for one compile


@dataclass
class Plan:
    """The IR edits one compile needs, and the checks of every pin against its output."""

    spec: Any
    settings: Any
    edits: list[tuple[str, Callable[[str], str]]] = field(default_factory=list)
    loop_done: list[dict] = field(default_factory=list)
    layout_done: list[dict] = field(default_factory=list)

    def describe(self) -> str:
        pins = self.settings.pins
        parts = [p.text() for p in pins.loops] + [p.text() for p in pins.layouts] if pins else []
        return "; ".join(parts)

    def check(self, art) -> list[dict]:
        return check(self, art)


def plan(spec, settings) -> Plan:
    """Which stages to edit (in pipeline order) for this kernel's pins."""
    from irscope.core import adapter

    p = Plan(spec, settings)
    pins = settings.pins
    if not pins:
        return p
    gluon = adapter.is_gluon(spec.fn)
    if pins.loops and not gluon:
        def edit_ttir(text: str) -> str:
            out, p.loop_done = rewrite_loops(text, pins.loops, spec.kernel, spec.file)
            return out

        p.edits.append(("ttir", edit_ttir))
    if pins.layouts:
        def edit_ttgir(text: str) -> str:
            out, p.layout_done = apply_layout_pins(text, pins.layouts, settings.target.warp_size)
            error = adapter.verify_ir(out, "ttgir", settings.target)
            if error:
                applied = [d for d in p.layout_done if "skipped" not in d]
                what = "; ".join(d["pin"].text() for d in applied)
                srcs = ", ".join(dict.fromkeys(d["pin"].source for d in applied))
                raise BadInput(f"{srcs} {what}: illegal layout, rejected by the MLIR parser/verifier: {error}")
            return out

        p.edits.append(("ttgir", edit_ttgir))
    return p


def _rec(kind: str, name: str, value: Any, source: str, status: str, detail: str) -> dict:
    return {"kind": kind, "name": name, "value": value, "source": source, "status": status, "detail": detail}


def check(plan_: Plan, art) -> list[dict]:
    """Confirm each pin (and each option a recipe or --set gave) in the compiled output."""
    from irscope.core import adapter

    spec, settings = plan_.spec, plan_.settings
    pins = settings.pins
    gluon = adapter.is_gluon(spec.fn)
    stages = art.stages
    ttir = stages.get("ttir") if isinstance(stages.get("ttir"), str) else ""
    ttgir = stages.get("ttgir") if isinstance(stages.get("ttgir"), str) else ""
    records = []
    for name, value in settings.options.items():
        records.append(_check_option(name, value, settings.sources.get(name, "--set"), art, ttir, ttgir, gluon,
                                     pins))
    for name, value in settings.env.items():
        records.append(_check_env(name, value, settings.sources.get(f"env:{name}", "recipe"), art, ttgir))
    if pins:
        for name, c in pins.constexprs.items():
            records.append(_check_constexpr(name, c, pins, art, ttgir))
        for pin in pins.loops:
            records.extend(_check_loop(pin, plan_, ttir, ttgir, gluon, spec))
        for pin in pins.layouts:
            records.append(_check_layout(pin, plan_, ttgir))
    return records


def _check_option(name, value, source, art, ttir, ttgir, gluon, pins) -> dict:
    eff = art.options.get(name, value)
    shown = f"{name}={value}"
    if name in ("num_warps", "num_ctas"):
        attr = "ttg.num-warps" if name == "num_warps" else "ttg.num-ctas"
        got = module_int_attr(ttgir, attr)
        if got == value:
            return _rec("option", name, value, source, "ok", f"{attr} = {got} in TTGIR")
        return _rec("option", name, value, source, "changed", f"TTGIR has {attr} = {got}")
    if eff != value and not (isinstance(value, (list, tuple)) and list(value) == list(eff or [])):
        return _rec("option", name, value, source, "changed", f"Triton compiled with {name}={eff}")
    if name == "num_stages":
        if gluon:
            return _rec("option", name, value, source, "no effect",
                        "Gluon kernels skip the pipeliner; num_stages changes nothing")
        loops = find_loops(ttir) if ttir else []
        if not loops:
            return _rec("option", name, value, source, "no effect", "the kernel has no scf.for loop to pipeline")
        own = [lp for lp in loops if "tt.num_stages" in lp.attrs]
        if len(own) == len(loops):
            return _rec("option", name, value, source, "no effect",
                        "every loop sets its own tt.num_stages (tl.range or a loop pin), which wins")
        return _rec("option", name, value, source, "ok",
                    f"num_stages={eff}; {len(loops) - len(own)} of {len(loops)} loops follow it")
    if name == "maxnreg" and value is not None and "ptx" in art.stages:
        m = re.search(r"^\s*\.maxnreg\s+(\d+)", art.stages["ptx"], re.M)
        if m and int(m.group(1)) == value:
            return _rec("option", name, value, source, "ok", f".maxnreg {value} in PTX; "
                                                             f"ptxas used {art.stats.get('registers', '?')}")
        return _rec("option", name, value, source, "changed", "no matching .maxnreg in PTX")
    if name == "waves_per_eu" and value and "llir" in art.stages:
        if f'"amdgpu-waves-per-eu"="{value}' in art.stages["llir"]:
            return _rec("option", name, value, source, "ok", f'"amdgpu-waves-per-eu"="{value}" in LLVM IR')
        return _rec("option", name, value, source, "changed", "no amdgpu-waves-per-eu attribute in LLVM IR")
    if name == "matrix_instr_nonkdim" and value:
        shapes = re.findall(r"amd_mfma<\{[^}]*instrShape = \[(\d+), (\d+)", ttgir)
        if not shapes:
            return _rec("option", name, value, source, "no effect", "no MFMA layout in TTGIR (no tt.dot)")
        ok = all(int(a) == value for a, _ in shapes)
        return _rec("option", name, value, source, "ok" if ok else "changed",
                    f"MFMA instrShape {', '.join(f'{a}x{b}' for a, b in shapes)} in TTGIR")
    return _rec("option", name, value, source, "ok", f"Triton compiled with {shown}")


def _check_env(name, value, source, art, ttgir) -> dict:
    on = str(value).lower() in ("1", "true", "on", "yes")
    if name == "TRITON_HIP_USE_ASYNC_COPY":
        n = len(re.findall(r"ttg\.async_copy_global_to_local|amdg(?:pu)?\.buffer_load_to_local", ttgir))
        if on:
            return _rec("env", name, value, source, "ok" if n else "no effect",
                        f"{n} async copies to LDS in TTGIR" if n else "no async copy to LDS in TTGIR")
        return _rec("env", name, value, source, "ok" if not n else "changed", f"{n} async copies to LDS in TTGIR")
    if name == "TRITON_HIP_USE_BLOCK_PINGPONG" and "amdgcn" in art.stages:
        n = len(re.findall(r"^\s*s_setprio\b", art.stages["amdgcn"], re.M))
        if on:
            return _rec("env", name, value, source, "ok" if n else "no effect",
                        f"{n} s_setprio (ping-pong priority switches) in AMDGCN" if n else
                        "no s_setprio in AMDGCN: the ping-pong pass found no loop it applies to")
        return _rec("env", name, value, source, "ok", f"{n} s_setprio in AMDGCN")
    return _rec("env", name, value, source, "unchecked", "set for the compile; nothing in the output shows it")


def _check_constexpr(name, c: ConstPin, pins: Pins, art, ttgir) -> dict:
    if name in pins.overridden:
        return _rec("constexpr", name, c.text, c.source, "overridden",
                    f"the command line gives {pins.overridden[name]}, which wins")
    got = art.args.get(name)
    if got is None:
        return _rec("constexpr", name, c.text, c.source, "changed", f"{name} is not in the specialization")
    m = re.match(r"gl\.(?:\w+\.)*BlockedLayout\(size_per_thread=(\[[^\]]*\]), threads_per_warp=(\[[^\]]*\]), "
                 r"warps_per_cta=(\[[^\]]*\]), order=(\[[^\]]*\])", got)
    if m:
        want = (f"sizePerThread = {m.group(1)}, threadsPerWarp = {m.group(2)}, warpsPerCTA = {m.group(3)}, "
                f"order = {m.group(4)}")
        hit = [a for a, v in layout_aliases(ttgir).items() if _squash(want) in _squash(v)]
        if hit:
            return _rec("constexpr", name, got, c.source, "ok", f"TTGIR has it as #{hit[0]}")
        return _rec("constexpr", name, got, c.source, "changed", "the TTGIR holds no such blocked layout")
    if got.startswith("gl."):
        return _rec("constexpr", name, got, c.source, "unchecked", "bound as the constexpr (layout not matched)")
    return _rec("constexpr", name, got, c.source, "ok", "bound in the specialization")


def _check_loop(pin: LoopPin, plan_: Plan, ttir: str, ttgir: str, gluon: bool, spec) -> list[dict]:
    out = []
    i, done = next(((i, d) for i, d in enumerate(plan_.loop_done) if d["pin"] is pin), (None, None))
    for name, value in pin.attrs:
        label = f"{pin.where}:{name}"
        if gluon:
            out.append(_rec("loop", label, value, pin.source, "no effect",
                            "Gluon kernels have no TTIR and skip the pipeliner; per-loop attributes change nothing"))
            continue
        if done and "skipped" in done:
            out.append(_rec("loop", label, value, pin.source, "not applicable", done["skipped"]))
            continue
        attr = LOOP_ATTRS[name][0]
        loops = [lp for lp in find_loops(ttir) if loop_matches(pin, lp, spec.file)]
        # a later pin that sets the same attribute on the same loop wins there (recipe < variant < --pin-loop)
        winners = {}
        for d in plan_.loop_done[i + 1:] if done else []:
            for at, v in d["pin"].attrs:
                if at == name:
                    winners.update({where: (d["pin"], v) for where in d["loops"]})
        if loops and all(lp.lines[:1] and lp.lines[0] in winners for lp in loops):
            by = dict.fromkeys(f"{w.source} gives {w.where}:{name}={_py_text(v)}"
                               for w, v in (winners[lp.lines[0]] for lp in loops))
            out.append(_rec("loop", label, value, pin.source, "overridden", "; ".join(by) + ", which wins"))
            continue
        loops = [lp for lp in loops if not (lp.lines[:1] and lp.lines[0] in winners)]
        if not loops:
            out.append(_rec("loop", label, value, pin.source, "no effect", "no loop matches in TTIR"))
            continue
        want = value if LOOP_ATTRS[name][1] is int else (True if value else None)
        got = [lp.attr_value(attr) for lp in loops]
        where = ", ".join(f"{os.path.basename(f)}:{ln}" for f, ln in (lp.lines[0] for lp in loops if lp.lines))
        if all(g == want for g in got) and name == "loop_unroll_factor":
            # Triton unrolls inside make_ttir, before the TTIR irscope edits: the attribute is there,
            # the unrolling is not. Say so rather than "ok".
            out.append(_rec("loop", label, value, pin.source, "no effect",
                            f"scf.for at {where} carries {attr} = {value}, but Triton unrolls in the TTIR "
                            f"stage, before the pinned TTIR; use tl.range(..., loop_unroll_factor={value})"))
        elif all(g == want for g in got) and name == "warp_specialize" and value \
                and not re.search(r"ttg\.warp_specialize\b", ttgir):
            out.append(_rec("loop", label, value, pin.source, "no effect",
                            f"scf.for at {where} carries {attr}, but the TTGIR has no ttg.warp_specialize op "
                            f"(this target or Triton version does not warp-specialize this loop)"))
        elif all(g == want for g in got):
            text = f"{attr} = {value}" if LOOP_ATTRS[name][1] is int else (attr if value else f"no {attr}")
            detail = f"scf.for at {where}: {text} in TTIR"
            if name == "num_stages":
                bufs = _multibuffers(ttgir)
                if bufs:
                    detail += f"; TTGIR buffers {', '.join(bufs)}"
            out.append(_rec("loop", label, value, pin.source, "ok", detail))
        else:
            out.append(_rec("loop", label, value, pin.source, "changed", f"TTIR loop at {where} has {attr} = {got}"))
    return out


def _multibuffers(ttgir: str) -> list[str]:
    """Shapes of the multi-buffered shared allocations (depth x tile), e.g. ['4x128x64xf16']."""
    return [m.group(1) for m in re.finditer(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+x[\dx]+\w+),",
                                            ttgir) if not m.group(1).endswith("xi64")]   # i64: mbarriers


def _check_layout(pin: LayoutPin, plan_: Plan, ttgir: str) -> dict:
    i, done = next(((i, d) for i, d in enumerate(plan_.layout_done) if d["pin"] is pin), (None, None))
    if done is None:
        return _rec("layout", f"#{pin.alias}", pin.text(), pin.source, "no effect", "not applied")
    if "skipped" in done:
        return _rec("layout", f"#{pin.alias}", pin.text(), pin.source, "not applicable", done["skipped"])
    # later pins of the alias: one that sets a field this pin sets (a whole layout sets every field) wins
    later = [d for d in plan_.layout_done[i + 1:] if d["alias"] == pin.alias and "skipped" not in d]
    mine = {k for k, _ in pin.fields}
    winners = [d["pin"] for d in later if pin.value is not None or d["pin"].value is not None
               or mine & {k for k, _ in d["pin"].fields}]
    if winners:
        return _rec("layout", f"#{pin.alias}", done["after"], pin.source, "overridden",
                    "; ".join(f"{w.source} gives {w.text()}" for w in winners) + ", which wins")
    after = done["after"]
    final = later[-1]["after"] if later else after   # later edits of other fields build on this one
    hit = [a for a, v in layout_aliases(ttgir).items() if _squash(v) == _squash(final)]
    if _squash(done["before"]) == _squash(after):
        return _rec("layout", f"#{pin.alias}", after, pin.source, "no effect",
                    f"#{pin.alias} already was {after}")
    if hit:
        was = parse_layout(done["before"])
        now = parse_layout(after)
        changed = ", ".join(f"{k} {was.fields.get(k)} -> {v}" for k, v in now.fields.items()
                            if was.fields.get(k) != v) if was and now and was.kind == now.kind else done["before"]
        return _rec("layout", f"#{pin.alias}", after, pin.source, "ok", f"in TTGIR as #{hit[0]} ({changed})")
    return _rec("layout", f"#{pin.alias}", after, pin.source, "changed", "the TTGIR no longer holds the pinned layout")
