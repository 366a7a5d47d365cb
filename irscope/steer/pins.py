"""The pins, one by one, and how they are written: the model a recipe and the command line share.

    loop       `--pin-loop 'LINE:num_stages=4'`, `'FILE:LINE:...'`, `'*:...'` (every loop): the per-loop
               attributes `tl.range(...)` would set, on the scf.for of that Python line (LoopPin)
    layout     `--pin-layout 'blocked=#ttg.blocked<{...}>'` replaces the layout of a TTGIR alias;
               `'blocked:sizePerThread=[1];order=[0]'` edits fields of it (LayoutPin)
    partition  `--pin-partition 'worker0:registers=48'`: the register budget of one warp-specialized worker
               partition (TTGIR's requestedRegisters; PTX's setmaxnreg.dec then says it) (PartitionPin)
    constexpr  a recipe's constexpr value (Gluon layouts included), part of the specialization (ConstPin)

A pin here is data: parsed and checked for form (known attribute, known field, balanced brackets).
Whether it fits a kernel is for loops.py and layouts.py to say when they rewrite the IR; the set of
pins of one compile is pinset.Pins. Malformed pins are BadInput (exit 2).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Any

from irscope.errors import BadInput, did_you_mean
from irscope.kernel.settings import parse_bool
from irscope.steer.mlir import balanced, mlir_text, split_attrs

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
    "sizePerThread",
    "threadsPerWarp",
    "warpsPerCTA",
    "order",
    "CGALayout",
    "CTAsPerCGA",
    "CTASplitNum",
    "CTAOrder",
    "versionMajor",
    "versionMinor",
    "instrShape",
    "version",
    "isTransposed",
    "tilesPerWarp",
    "elementBitWidth",
    "dim",
    "parent",
    "opIdx",
    "kWidth",
    "vec",
    "perPhase",
    "maxPhase",
    "swizzlingByteWidth",
    "transposed",
    "fp4Padded",
    "register",
    "lane",
    "warp",
    "block",
    "blockM",
    "blockN",
    "colStride",
    "unpacked",
    "CTASplitM",
    "CTASplitN",
    "isBlockScale",
    "twoCTAs",
    "offset",
    "alignment",
    "isSigned",
)


# ------------------------------------------------------------------ the pins


@dataclass(frozen=True)
class ConstPin:
    """A recipe's constexpr value, bound in the specialization."""

    name: str
    text: str  # what spec.parse_value reads back (e.g. 'gl.BlockedLayout(...)', '128')
    source: str


@dataclass(frozen=True)
class LoopPin:
    """Per-loop attributes for the scf.for of one Python line (or every loop: line None)."""

    file: str | None  # None: the kernel's own file
    line: int | None  # None: every loop ('*')
    attrs: tuple[tuple[str, Any], ...]
    source: str
    optional: bool = False  # a recipe default: skipped, not refused, where no loop is at the line

    @property
    def where(self) -> str:
        """'33', 'FILE:33' or '*'."""
        line = "*" if self.line is None else str(self.line)
        return f"{self.file}:{line}" if self.file else line

    def text(self) -> str:
        """The pin as --pin-loop takes it."""
        return f"{self.where}:" + ",".join(f"{k}={py_text(v)}" for k, v in self.attrs)


@dataclass(frozen=True)
class LayoutPin:
    """A TTGIR alias's layout: replaced whole (value) or edited field by field (fields)."""

    alias: str  # without '#'
    value: str | None  # full replacement, '#ttg.blocked<{...}>'
    fields: tuple[tuple[str, str], ...]  # field -> MLIR text of its new value
    source: str
    optional: bool = False  # a recipe default: skipped, not refused, where the alias or a field is missing

    def text(self) -> str:
        """The pin as --pin-layout takes it."""
        if self.value is not None:
            return f"{self.alias}={self.value}"
        return f"{self.alias}:" + ";".join(f"{k}={v}" for k, v in self.fields)


@dataclass(frozen=True)
class PartitionPin:
    """The register budget of worker partition `index` of the kernel's ttg.warp_specialize op."""

    index: int
    registers: int
    source: str

    def text(self) -> str:
        """The pin as --pin-partition takes it."""
        return f"worker{self.index}:registers={self.registers}"


SETMAXNREG_RANGE = (24, 256)  # PTX: setmaxnreg takes 24..256, a multiple of 8


def parse_pin_partition(text: str, source: str = "--pin-partition") -> PartitionPin:
    """'worker0:registers=48' (or '0:registers=48')."""
    m = re.fullmatch(r"\s*(?:worker)?(\d+)\s*:\s*registers\s*=\s*(\d+)\s*", text)
    if not m:
        raise BadInput(
            f"{source} {text!r}: expected workerN:registers=R, e.g. 'worker0:registers=48' (the "
            f"register budget of the first worker partition)"
        )
    regs = int(m.group(2))
    lo, hi = SETMAXNREG_RANGE
    if not lo <= regs <= hi or regs % 8:
        raise BadInput(
            f"{source} {text!r}: a partition's registers are a multiple of 8 from {lo} to {hi} "
            f"(what PTX's setmaxnreg accepts), not {regs}"
        )
    return PartitionPin(int(m.group(1)), regs, source)


def py_text(v: Any) -> str:
    """A loop attribute's value as a pin writes it: true/false, or the number."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def same_file(a: str, b: str) -> bool:
    """Whether two spellings of a path (absolute, relative, as the user typed it) name the same file."""
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


# ------------------------------------------------------------------ loop pins


def loop_attr_value(name: str, value: Any, where: str) -> Any:
    """Check one per-loop attribute and its value (TOML-typed or text)."""
    if name not in LOOP_ATTRS:
        raise BadInput(
            f"{where}: {name!r} is not a per-loop attribute{did_you_mean(name, LOOP_ATTRS)}; "
            f"valid: {', '.join(LOOP_ATTRS)}"
        )
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
        raise BadInput(
            f"{source} {text!r}: expected LINE:KEY=VALUE[,KEY=VALUE], e.g. '33:num_stages=4' or "
            f"'examples/softmax.py:15:num_stages=1' ('*' for every loop); keys: {', '.join(LOOP_ATTRS)}"
        )
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


# ------------------------------------------------------------------ layout pins


_ALIAS = re.compile(r"^#?([A-Za-z_][\w.$-]*)$")


def parse_pin_layout(text: str, source: str = "--pin-layout") -> LayoutPin:
    """'blocked=#ttg.blocked<{...}>' (replace) or 'blocked:sizePerThread=[1];order=[0]' (edit fields)."""
    t = text.strip()
    eq, colon = t.find("="), t.find(":")
    if colon != -1 and (eq == -1 or colon < eq):
        alias, _, rest = t.partition(":")
        alias_name(alias, source, text)
        fields = []
        for item in split_attrs(rest, ";,"):
            key, sep, raw = item.partition("=")
            if not sep or not key.strip():
                raise BadInput(f"{source} {text!r}: {item.strip()!r} is not FIELD=VALUE (e.g. sizePerThread=[1])")
            fields.append(layout_field(key.strip(), raw.strip(), f"{source} {text!r}"))
        if not fields:
            raise BadInput(f"{source} {text!r}: no field given (e.g. blocked:sizePerThread=[1])")
        return LayoutPin(alias_name(alias, source, text), None, tuple(fields), source)
    alias, sep, value = t.partition("=")
    if not sep:
        raise BadInput(
            f"{source} {text!r}: expected ALIAS=#ttg.KIND<{{...}}> or ALIAS:FIELD=VALUE, e.g. "
            f"'blocked=#ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
            f"order = [0]}}>' or 'blocked:sizePerThread=[1]'"
        )
    return LayoutPin(alias_name(alias, source, text), layout_value(value, f"{source} {text!r}"), (), source)


def alias_name(alias: str, source: str, whole: str) -> str:
    """'#blocked1' or 'blocked1' -> 'blocked1'; BadInput for what cannot be a layout alias."""
    m = _ALIAS.match(alias.strip())
    if not m or m.group(1).startswith("loc"):
        raise BadInput(
            f"{source} {whole!r}: {alias.strip()!r} is not a layout alias of the TTGIR (e.g. blocked, "
            f"blocked1, mma, shared)"
        )
    return m.group(1)


def layout_value(value: str, where: str) -> str:
    """A full layout attribute, '#ttg.blocked<{...}>' (the leading '#' may be left out)."""
    v = value.strip()
    if not v.startswith("#"):
        v = "#" + v
    if not re.fullmatch(r"#\w+\.\w+<.*>", v, re.S):
        raise BadInput(
            f"{where}: {value.strip()!r} is not a layout attribute; expected e.g. "
            f"#ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>"
        )
    if not balanced(v):
        raise BadInput(f"{where}: {value.strip()!r}: unbalanced brackets")
    return v


def layout_field(name: str, value: Any, where: str) -> tuple[str, str]:
    """One field edit; value is TOML data (list, int, bool) or text ('[1]', '#blocked')."""
    if name not in LAYOUT_FIELDS:
        raise BadInput(
            f"{where}: {name!r} is not a field of a TTGIR layout{did_you_mean(name, LAYOUT_FIELDS)}; "
            f"e.g. sizePerThread, threadsPerWarp, warpsPerCTA, order, instrShape"
        )
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = ast.literal_eval(text.replace("true", "True").replace("false", "False"))
        except (ValueError, SyntaxError):
            if not text or not balanced(text):
                raise BadInput(f"{where}: {name}={value!r} is not a value (e.g. [1, 8], 4, true)") from None
            return name, text
        value = parsed
    return name, mlir_text(value)


# ------------------------------------------------------------------ which pin wins


def sets_again(later: LoopPin | LayoutPin, pin: LoopPin | LayoutPin, attr: str | None = None) -> bool:
    """The one rule of which pin wins (recipe < variant < the command line: the later one): does
    `later`, given after `pin`, set again what `pin` sets?

    Layout pins: the same alias, and a field of `pin` (a whole layout, on either side, sets every
    field). Loop pins: the attribute `attr` (else any of `pin`'s); at which loops is the caller's
    to match (the same line or '*' when read from a recipe, the loops each edited in the output).
    """
    if isinstance(pin, LayoutPin) or isinstance(later, LayoutPin):  # a layout pin and a loop pin never overlap
        if not (isinstance(pin, LayoutPin) and isinstance(later, LayoutPin)):
            return False
        return later.alias == pin.alias and (
            pin.value is not None
            or later.value is not None
            or bool({k for k, _ in pin.fields} & {k for k, _ in later.fields})
        )
    names = {attr} if attr is not None else {a for a, _ in pin.attrs}
    return bool(names & {a for a, _ in later.attrs})


def overridden_by(pin: LoopPin | LayoutPin, later: list) -> str | None:
    """The source of the last of the `later` pins that sets again what `pin` sets, else None.

    A loop pin is overridden when each of its attributes is set again at its line (or at '*'); a
    layout pin when a later one of its alias sets one of its fields (sets_again).
    """
    if isinstance(pin, LoopPin):
        keys = {(p.where, a) for p in later for a, _ in p.attrs}
        if not all({(pin.where, a), ("*", a)} & keys for a, _ in pin.attrs):
            return None
        return next(p.source for p in reversed(later) if sets_again(p, pin) and p.where in (pin.where, "*"))
    return next((q.source for q in reversed(later) if sets_again(q, pin)), None)
