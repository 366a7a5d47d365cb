"""The signature grammar: one element of a kernel's specialization, parsed, printed and stood in for.

Each element becomes a stand-in launch argument that Triton's own binder specializes as it would
the real one (adapter.bind): a pointer of a given dtype and address alignment, an int of a given
size and divisibility, a float, a constexpr value, a host-side tensor descriptor with its block
shape (and, for Gluon, its shared layout), or a tuple of any of these, nested.

Element grammar (positional or after NAME=):
  *DTYPE[:ALIGN][:large]
                   pointer; ALIGN = byte alignment of the address (default 16,
                   what every torch allocation has); e.g. *fp16:16, *fp32:4;
                   :large = the allocation exceeds 2 GiB (on AMD: no buffer ops)
  iN / uN [:16|:1] integer; :16 = divisible by 16, :1 = equal to 1; e.g. i32, i64:16
  fp32             float scalar (Python floats launch as fp32)
  i1 / u1          bool
  tensordesc<DTYPE[B0, B1, ...][, LAYOUT][, padding=nan][, round_f32_to_tf32=true]>
                   a host-side TMA tensor descriptor (TensorDescriptor.from_tensor(t, [B0, B1]))
                   with that block shape; LAYOUT (a gl.NVMMASharedLayout(...)) makes it Gluon's
                   descriptor (a Gluon kernel without one gets NVMMASharedLayout.get_default_for)
  (E1, E2, ...)    a tuple of elements, nested as the kernel's parameter is: (*fp16:16, i32:16)
  fn:NAME          a @triton.jit function passed as a constexpr (looked up by NAME in the kernel's
                   module; NAME may be dotted, e.g. fn:activations.relu)
  VALUE            constexpr value: 128, 1.5, True, None, 'str', tl.float16, gl.BlockedLayout(...)
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from irscope import adapter
from irscope.errors import BadInput, did_you_mean
from irscope.kernel.brackets import check_brackets

INT_TYPES = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
FLOAT_TYPES = {"fp16", "bf16", "fp32", "fp64"}
BOOL_TYPES = {"i1", "u1"}


@dataclass(frozen=True)
class ArgSpec:
    """One element as the user wrote it, made canonical."""

    kind: str  # "pointer" | "int" | "float" | "bool" | "constexpr" | "tensordesc" | "tuple" | "fn"
    type: str = ""  # "*fp16", "i32", "fp32", ...; a descriptor's element type ("fp16")
    align: int = 0  # pointer byte alignment / int hint (16, 1 or 0 = none)
    value: Any = None  # constexpr value; a descriptor's Gluon layout (or None); "fn": the NAME
    large: bool = False  # pointer into an allocation over 2 GiB (AMD: no 32-bit buffer-op offsets)
    block: tuple[int, ...] = ()  # a descriptor's block shape
    items: tuple[ArgSpec, ...] = ()  # a tuple's elements
    padding: str = "zero"  # a descriptor's out-of-bounds fill ("zero" or "nan")
    tf32: bool = False  # a descriptor that rounds fp32 to tf32 (Triton 3.9+)

    def text(self) -> str:
        if self.kind == "tensordesc":
            parts = [f"{self.type}[{', '.join(map(str, self.block))}]"]
            if self.value is not None:
                parts.append(_value_text(self.value))
            if self.padding != "zero":
                parts.append(f"padding={self.padding}")
            if self.tf32:
                parts.append("round_f32_to_tf32=true")
            return f"tensordesc<{', '.join(parts)}>"
        if self.kind == "tuple":
            inner = ", ".join(i.text() for i in self.items)
            return f"({inner},)" if len(self.items) == 1 else f"({inner})"
        if self.kind == "fn":
            return f"fn:{self.value}"
        if self.kind == "pointer":
            return f"{self.type}:{self.align}" + (":large" if self.large else "")
        if self.kind == "int":
            return f"{self.type}:{self.align}" if self.align else self.type
        if self.kind == "constexpr":
            return _value_text(self.value)
        return self.type


class _Pointer:
    """A launch argument Triton's specializer reads as a pointer: data_ptr(), dtype, ptr_range().

    ptr_range() is the size of the allocation behind it: AMD's backend gives pointers into
    allocations of at most 2 GiB tt.pointer_range = 32 (buffer loads); torch tensors answer it
    from their storage, and so does this stand-in (small, unless the element says :large).
    """

    def __init__(self, dtype, address: int, large: bool = False):
        self.dtype = dtype
        self._address = address
        self._range = 2**40 if large else 2**20

    def data_ptr(self) -> int:
        return self._address

    def ptr_range(self) -> int:
        return self._range


def _value_text(value: Any) -> str:
    """Text that parse_value reads back to the same value (for manifests and spec files)."""
    import triton.language as tl

    if isinstance(value, tl.dtype):
        return f"tl.{value.name}"
    if type(value).__name__.endswith("Layout"):
        return "gl." + _layout_repr(value)
    return repr(value)


def _layout_repr(value: Any) -> str:

    if dataclasses.is_dataclass(value):
        fields_ = [f for f in dataclasses.fields(value) if f.init]
        args = ", ".join(f"{f.name}={_layout_arg(getattr(value, f.name))}" for f in fields_)
        return f"{type(value).__name__}({args})"
    return repr(value)


def _layout_arg(v: Any) -> str:
    if type(v).__name__.endswith("Layout"):
        return "gl." + _layout_repr(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_layout_arg(x) for x in v)
        return f"[{inner}]"
    return repr(v)


def parse_element(text: str, where: str) -> ArgSpec:  # noqa: C901
    """Parse one signature element; `where` names it in errors ('element 3 (n)')."""
    t = text.strip()
    if not t:
        raise BadInput(f"signature {where}: empty element")
    check_brackets(t, f"signature {where}")
    if t.startswith("tensordesc"):
        return _parse_descriptor(t, where)
    if t.startswith("(") and t.endswith(")") and not _is_literal(t):
        return _parse_tuple(t, where)
    if t.startswith("fn:"):
        name = t[3:].strip()
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
            raise BadInput(
                f"signature {where}: {t!r}: fn:NAME names a @triton.jit function of the kernel's module, "
                f"e.g. fn:leaky_relu or fn:activations.relu"
            )
        return ArgSpec("fn", value=name)
    if t.startswith("*"):
        large = t.endswith(":large")
        if large:
            t = t[: -len(":large")]
        body, colon, align = t[1:].partition(":")
        if colon and not align.strip():
            raise BadInput(f"signature {where}: {t!r} has ':' but no alignment; e.g. *fp16:16 or *fp16 (16 bytes)")
        dtype = body.strip()
        if dtype.startswith("k"):  # Triton's const-pointer spelling *kfp16
            dtype = dtype[1:]
        names = adapter.pointer_dtype_names()
        if dtype not in names:
            raise BadInput(
                f"signature {where}: unknown pointer element type {dtype!r} in {t!r}"
                f"{did_you_mean(dtype, names)}; valid: {', '.join(names)}"
            )
        a = _int(align, where, t) if align else 16
        if a <= 0 or a & (a - 1):
            raise BadInput(f"signature {where}: pointer alignment in {t!r} must be a power of two (1, 2, 4, 8, 16)")
        return ArgSpec("pointer", "*" + adapter.canonical_pointer_dtype(dtype), min(a, 16), large=large)
    head, colon, hint = t.partition(":")
    head = head.strip()
    if colon and not hint.strip() and head in (*INT_TYPES, *BOOL_TYPES, *FLOAT_TYPES):
        raise BadInput(
            f"signature {where}: {t!r} has ':' but no hint; write {head}, {head}:16 or {head}:1"
            if head in INT_TYPES
            else f"signature {where}: {head!r} takes no ':' hint"
        )
    if head in INT_TYPES:
        h = _int(hint, where, t) if colon else 0
        if h not in (1, 16) and colon:
            raise BadInput(f"signature {where}: integer hint in {t!r} must be :16 (divisible by 16) or :1 (equal to 1)")
        return ArgSpec("int", head, h)
    if head in BOOL_TYPES:
        if colon:
            raise BadInput(f"signature {where}: bool {head!r} takes no ':' hint")
        return ArgSpec("bool", head)
    if head in FLOAT_TYPES:
        if hint:
            raise BadInput(f"signature {where}: float {head!r} takes no ':' hint")
        return ArgSpec("float", head)
    if head == "constexpr":
        raise BadInput(f"signature {where}: give the constexpr's value (e.g. 128), not the word 'constexpr'")
    return ArgSpec("constexpr", value=parse_value(t, where))


def parse_value(text: str, where: str) -> Any:
    """A constexpr value: a Python literal, a Triton dtype (tl.float16 / fp16), or a Gluon
    layout (gl.BlockedLayout([4], [32], [4], [0]), nested layouts allowed).

    Read as data: only literals, dtypes and layout-class calls are accepted, nothing
    is executed.
    """
    t = text.strip()
    try:
        return ast.literal_eval(t)
    except (ValueError, SyntaxError):
        pass
    name = t[3:] if t.startswith("tl.") else t
    import triton.language as tl

    value = getattr(tl, name, None)
    if isinstance(value, tl.dtype):
        return value
    if (short := adapter.pointer_dtype(name)) is not None:  # tl.fp16, as manifests print dtypes
        return short
    try:
        tree = ast.parse(t, mode="eval")
    except SyntaxError:
        tree = None
    if tree is not None and isinstance(tree.body, ast.Call):
        return _layout_value(tree.body, where, t)
    raise BadInput(
        f"signature {where}: cannot read {t!r}: expected a pointer (*fp16:16), an integer type "
        f"(i32, i64:16, i32:1), a float type (fp32), or a constexpr value (128, True, tl.float16)"
    )


def _layout_value(node: ast.AST, where: str, whole: str) -> Any:
    """Build a Gluon layout from a call expression whose callee is a gl.*Layout class."""
    if isinstance(node, ast.Call):
        cls = _layout_class(node.func)
        if cls is None:
            raise BadInput(
                f"{where}: {ast.unparse(node.func)!r} in {whole!r} is not a Gluon layout class "
                f"(e.g. gl.BlockedLayout, gl.SliceLayout, gl.NVMMASharedLayout)"
            )
        args = [_layout_value(a, where, whole) for a in node.args]
        if any(k.arg is None for k in node.keywords):
            raise BadInput(f"{where}: {whole!r}: write the layout's arguments out (no ** unpacking)")
        kwargs = {str(k.arg): _layout_value(k.value, where, whole) for k in node.keywords}
        try:
            return cls(*args, **kwargs)
        except Exception as e:
            raise BadInput(f"{where}: {ast.unparse(node)} is not a valid layout: {e}") from None
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_layout_value(e, where, whole) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Attribute):
        dtype = _layout_class(node, want_dtype=True)
        if dtype is not None:
            return dtype
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise BadInput(f"{where}: {ast.unparse(node)!r} in {whole!r} is neither a literal nor a layout") from None


def _layout_class(func: ast.AST, want_dtype: bool = False):
    """gl.X / gl.amd.X / gl.nvidia.X / X resolved inside triton.experimental.gluon.language."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    parts.reverse()
    if parts[0] in ("gl", "ttgl", "tl"):
        parts = parts[1:]
    try:
        import triton.experimental.gluon.language as gl
    except ImportError:
        return None
    obj: Any = gl
    for part in parts:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if want_dtype:
        import triton.language as tl

        return obj if isinstance(obj, tl.dtype) else None
    return obj if isinstance(obj, type) and obj.__name__.endswith("Layout") else None


_DESCRIPTOR = re.compile(r"^tensordesc\s*<\s*(?P<dtype>\w+)\s*\[(?P<block>[^\]]*)\]\s*(?:,(?P<rest>.*))?>$", re.S)
TMA_MAX_BOX = 256  # cuTensorMapEncodeTiled: each box dimension at most 256 elements
TMA_MIN_INNER = 16  # ... and the innermost one at least 16 bytes (a multiple of 16)


def _parse_descriptor(t: str, where: str) -> ArgSpec:
    """tensordesc<fp16[128, 64]>, tensordesc<fp16[128, 64], gl.NVMMASharedLayout(...), padding=nan>."""
    m = _DESCRIPTOR.match(t)
    if not m:
        raise BadInput(
            f"signature {where}: cannot read {t!r}: a tensor descriptor is tensordesc<DTYPE[B0, B1, ...]> "
            f"with its block shape, e.g. tensordesc<fp16[128, 64]>"
        )
    dtype = m["dtype"]
    names = adapter.pointer_dtype_names()
    if dtype not in names:
        raise BadInput(
            f"signature {where}: unknown descriptor element type {dtype!r} in {t!r}"
            f"{did_you_mean(dtype, names)}; valid: {', '.join(names)}"
        )
    dims = [d.strip() for d in m["block"].split(",") if d.strip()]
    block = tuple(_int(d, where, t) for d in dims)
    if not 1 <= len(block) <= 5:
        raise BadInput(f"signature {where}: {t!r}: a descriptor's block has 1 to 5 dimensions, not {len(block)}")
    bad = [d for d in block if d <= 0 or d & (d - 1)]
    if bad:
        raise BadInput(
            f"signature {where}: {t!r}: block dimension {bad[0]} is not a power of two "
            f"(Triton's blocks are: 16, 32, 64, 128, 256)"
        )
    layout, padding, tf32 = None, "zero", False
    for part in split_top(m["rest"] or ""):
        key, eq, val = part.partition("=")
        key = key.strip()
        if eq and key == "padding":
            padding = val.strip().strip("'\"")
            if padding not in ("zero", "nan"):
                raise BadInput(f"signature {where}: {t!r}: padding is zero or nan, not {padding!r}")
        elif eq and key == "round_f32_to_tf32":
            tf32 = val.strip().lower() in ("1", "true")
            if tf32 and dtype != "fp32":
                raise BadInput(f"signature {where}: {t!r}: round_f32_to_tf32 applies to fp32 descriptors only")
        elif part.strip():
            layout = parse_value(part, where)
            if not type(layout).__name__.endswith("SharedLayout"):
                raise BadInput(
                    f"signature {where}: {t!r}: {part.strip()!r} is not a shared layout; a Gluon "
                    f"descriptor takes gl.NVMMASharedLayout(...) (or padding=nan)"
                )
    if padding == "nan" and not dtype.startswith(("fp", "bf")):
        raise BadInput(f"signature {where}: {t!r}: padding=nan needs a floating-point element type")
    return ArgSpec("tensordesc", dtype, value=layout, block=block, padding=padding, tf32=tf32)


def check_tma_box(a: ArgSpec, where: str) -> None:
    """The limits a TMA descriptor's box has on NVIDIA (what cuTensorMapEncodeTiled would refuse at launch)."""
    too_big = [d for d in a.block if d > TMA_MAX_BOX]
    if too_big:
        raise BadInput(
            f"{where}: {a.text()}: block dimension {too_big[0]} exceeds the TMA box limit of "
            f"{TMA_MAX_BOX} elements per dimension"
        )
    inner = a.block[-1] * adapter.pointer_dtype(a.type).primitive_bitwidth // 8
    if inner % TMA_MIN_INNER:
        raise BadInput(
            f"{where}: {a.text()}: the innermost block dimension is {inner} bytes; TMA needs a "
            f"multiple of {TMA_MIN_INNER} bytes (e.g. at least {TMA_MIN_INNER * 8 // adapter.pointer_dtype(a.type).primitive_bitwidth} {a.type} elements)"
        )


def _is_literal(t: str) -> bool:
    try:
        ast.literal_eval(t)
        return True
    except (ValueError, SyntaxError):
        return False


def _parse_tuple(t: str, where: str) -> ArgSpec:
    """(E1, E2, ...): each element parsed as a top-level one; (E,) is a one-element tuple."""
    parts = split_top(t[1:-1])
    if parts and not parts[-1].strip():
        parts = parts[:-1]
    items = tuple(parse_element(p, f"{where}[{i}]") for i, p in enumerate(parts))
    return ArgSpec("tuple", items=items)


def _int(text: str, where: str, whole: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"signature {where}: {text!r} in {whole!r} is not a number") from None


def split_signature(text: str) -> list[str]:
    """Comma-separated elements; commas inside quotes or brackets (tensordesc<...> too) do not split.
    (A signature's brackets are checked first, by check_brackets: spec.build_spec does.)"""
    return split_top(text, ",", "([{<", ")]}>")


def split_top(text: str, seps: str = ",", opening: str = "([{", closing: str = ")]}") -> list[str]:
    """Split at `seps` outside quotes and brackets; parts as written (an empty text gives none).

    Also splits MLIR attribute text (steer/mlir.py), with '<' and '>' as brackets too.
    """
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip() or parts:
        parts.append("".join(cur))
    return parts


def stand_in(a: ArgSpec, fn=None) -> Any:
    """The launch argument Triton's binder reads as this element; `fn` (the kernel) resolves fn:NAME."""
    if a.kind == "tuple":
        return tuple(stand_in(i, fn) for i in a.items)
    if a.kind == "tensordesc":
        return _descriptor(a, fn)
    if a.kind == "fn":
        return _function(a.value, fn)
    if a.kind == "pointer":
        return _Pointer(adapter.pointer_dtype(a.type[1:]), 0 if a.align >= 16 else a.align, a.large)
    if a.kind == "int":
        bits = INT_TYPES[a.type]
        base = {8: 0, 16: 0, 32: 0, 64: 2**32}[bits] if a.type.startswith("i") else (2**63 if bits == 64 else 0)
        if a.align == 1:
            return 1
        return base + (16 if a.align == 16 else 7)
    if a.kind == "float":
        return 1.5
    if a.kind == "bool":
        return True
    return a.value


def _descriptor(a: ArgSpec, fn) -> Any:
    """A real Triton TensorDescriptor (Gluon's for a Gluon kernel or a given layout) over a stand-in
    pointer: a row-major tensor four blocks on a side, so the descriptor's own checks pass."""
    dtype = copy.copy(adapter.pointer_dtype(a.type))
    dtype.is_floating_point = dtype.is_floating()  # what the descriptor asks a torch dtype (padding=nan)
    base = _Pointer(dtype, 0)
    shape = [4 * d for d in a.block]
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return adapter.tensor_descriptor(
        base,
        shape,
        strides,
        list(a.block),
        a.value,
        a.padding,
        a.tf32,
        gluon=a.value is not None or (fn is not None and adapter.is_gluon(fn)),
    )


def _function(name: str, fn) -> Any:
    """fn:NAME: the object NAME names in the kernel's module (attribute lookup, nothing executed)."""
    globs = getattr(getattr(fn, "fn", None), "__globals__", None) or {}
    head, *rest = name.split(".")
    obj = globs.get(head)
    for part in rest:
        obj = getattr(obj, part, None)
    if obj is None or adapter.unwrap_kernel(obj) is None and not callable(obj):
        raise BadInput(
            f"fn:{name}: the kernel's module has no function {name!r} (fn:NAME names a @triton.jit "
            f"function defined in or imported by the kernel's file)"
        )
    return obj


def function_name(value: Any, fn) -> str | None:
    """NAME such that fn:NAME finds `value` from the kernel `fn`'s module (for captures), or None."""
    globs = getattr(getattr(fn, "fn", None), "__globals__", None) or {}
    for name, obj in globs.items():
        if obj is value:
            return name
    target = getattr(getattr(value, "fn", value), "__module__", None)
    for name, obj in globs.items():
        if getattr(obj, "__name__", None) == target and getattr(obj, getattr(value, "__name__", ""), None) is value:
            return f"{name}.{getattr(value, '__name__', '')}"
    return None


def bound_text(ty: Any, path: tuple[int, ...], attrs: dict, constants: dict, fn=None) -> str | None:
    """The element text for what Triton's binder decided at `path` (a capture's record), or None when
    the grammar has no element for it. Tuples recurse; a descriptor is read back through the grammar
    (Gluon's carries its layout's repr); constexprs inside tuples are their values."""
    if isinstance(ty, tuple):
        items = [bound_text(t, (*path, i), attrs, constants, fn) for i, t in enumerate(ty)]
        texts = [i for i in items if i is not None]
        if len(texts) < len(items):
            return None
        return f"({texts[0]},)" if len(texts) == 1 else f"({', '.join(texts)})"
    if ty == "constexpr":
        value = constants.get(path)
        if callable(value) and not type(value).__name__.endswith("Layout"):
            name = function_name(value, fn)
            return f"fn:{name}" if name else None
        return _value_text(value)
    if isinstance(ty, str) and ty.startswith("tensordesc"):
        try:
            return parse_element(ty, "capture").text()
        except BadInput:
            return None
    divisible = any(len(kv) == 2 and kv[0] == "tt.divisibility" and kv[1] == 16 for kv in attrs.get(path) or [])
    if isinstance(ty, str) and ty.startswith("*"):
        return f"{ty}:{16 if divisible else 8}"
    if isinstance(ty, str) and ty[:1] in "iu" and ty[1:].isdigit() and ty not in BOOL_TYPES:
        return f"{ty}:16" if divisible else ty
    if ty in BOOL_TYPES or ty in FLOAT_TYPES:
        return ty
    return None
