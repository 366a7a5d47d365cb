"""A kernel specialization: what one launch of a kernel looks like to the compiler.

The user writes it in Triton's AOT convention (`--signature "*fp16:16, i32, 128"`)
or by name (`--arg n=i32:16 --const BLOCK=1024`). irscope turns each element into
a stand-in launch argument (a pointer of a given dtype and address alignment, an
int of a given size and divisibility, a float, a constexpr value) and hands those
to Triton's own binder (adapter.bind). So the specialization — tt.divisibility on
16-byte-aligned pointers and on ints divisible by 16, ints equal to 1 turned into
constexprs, do_not_specialize — is decided by the same code as a real launch.

Element grammar (positional or after NAME=):
  *DTYPE[:ALIGN][:large]
                   pointer; ALIGN = byte alignment of the address (default 16,
                   what every torch allocation has); e.g. *fp16:16, *fp32:4;
                   :large = the allocation exceeds 2 GiB (on AMD: no buffer ops)
  iN / uN [:16|:1] integer; :16 = divisible by 16, :1 = equal to 1; e.g. i32, i64:16
  fp32             float scalar (Python floats launch as fp32)
  i1 / u1          bool
  VALUE            constexpr value: 128, 1.5, True, None, 'str', tl.float16
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from irscope.core import adapter, loader
from irscope.errors import BadInput, did_you_mean

INT_TYPES = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
FLOAT_TYPES = {"fp16", "bf16", "fp32", "fp64"}
BOOL_TYPES = {"i1", "u1"}


@dataclass(frozen=True)
class ArgSpec:
    """One element as the user wrote it, made canonical."""

    kind: str            # "pointer" | "int" | "float" | "bool" | "constexpr"
    type: str = ""       # "*fp16", "i32", "fp32", ...
    align: int = 0       # pointer byte alignment / int hint (16, 1 or 0 = none)
    value: Any = None    # constexpr value
    large: bool = False  # pointer into an allocation over 2 GiB (AMD: no 32-bit buffer-op offsets)

    def text(self) -> str:
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


def parse_element(text: str, where: str) -> ArgSpec:
    """Parse one signature element; `where` names it in errors ('element 3 (n)')."""
    t = text.strip()
    if not t:
        raise BadInput(f"signature {where}: empty element")
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
        return ArgSpec("pointer", "*" + dtype, min(a, 16), large=large)
    head, colon, hint = t.partition(":")
    head = head.strip()
    if colon and not hint.strip() and head in (*INT_TYPES, *BOOL_TYPES, *FLOAT_TYPES):
        raise BadInput(f"signature {where}: {t!r} has ':' but no hint; write {head}, {head}:16 or {head}:1"
                       if head in INT_TYPES else f"signature {where}: {head!r} takes no ':' hint")
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
            raise BadInput(f"{where}: {ast.unparse(node.func)!r} in {whole!r} is not a Gluon layout class "
                           f"(e.g. gl.BlockedLayout, gl.SliceLayout, gl.NVMMASharedLayout)")
        args = [_layout_value(a, where, whole) for a in node.args]
        kwargs = {k.arg: _layout_value(k.value, where, whole) for k in node.keywords}
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


def _int(text: str, where: str, whole: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"signature {where}: {text!r} in {whole!r} is not a number") from None


def split_signature(text: str) -> list[str]:
    """Comma-separated elements; commas inside quotes or brackets do not split."""
    return split_top(text)


def split_top(text: str, seps: str = ",", opening: str = "([{", closing: str = ")]}") -> list[str]:
    """Split at `seps` outside quotes and brackets; parts as written (an empty text gives none).

    Also splits MLIR attribute text (steer/mlir.py), with '<' and '>' as brackets too.
    """
    parts, depth, quote, cur = [], 0, "", []
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


@dataclass
class KernelSpec:
    """Kernel + one specialization: the 'spec' half of every compile."""

    kernel: str
    file: str
    fn: Any
    args: dict[str, ArgSpec]          # by parameter name, in parameter order
    notes: list[str] = field(default_factory=list)

    @property
    def params(self) -> list:
        return adapter.kernel_params(self.fn)

    def signature_text(self) -> str:
        return ", ".join(self.args[p.name].text() for p in self.params if p.name in self.args)

    def canonical(self) -> dict[str, str]:
        return {name: a.text() for name, a in self.args.items()}

    def launch_args(self) -> list:
        """Stand-in arguments, positional, for Triton's binder."""
        values = []
        for p in self.params:
            a = self.args.get(p.name)
            if a is None:
                values.append(p.default)
                continue
            values.append(_stand_in(a))
        return values


def _stand_in(a: ArgSpec) -> Any:
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


def build_spec(kernel_ref, signature: str | None, named_args: list[str], consts: list[str]) -> KernelSpec:
    """Combine --signature, --arg NAME=TYPE and --const NAME=VALUE into one KernelSpec."""
    fn = kernel_ref.fn
    params = adapter.kernel_params(fn)
    names = [p.name for p in params]
    args: dict[str, ArgSpec] = {}
    for item, flag in [(a, "--arg") for a in named_args] + [(c, "--const") for c in consts]:
        key, sep, _ = item.partition("=")
        if not sep:
            raise BadInput(f"{flag} {item!r}: expected NAME=VALUE")
        if key.strip() not in names:
            raise BadInput(f"{flag} {item!r}: {kernel_ref.name} has no parameter {key.strip()!r}"
                           f"{did_you_mean(key.strip(), names)}; parameters: {', '.join(names)}")
    if signature is not None:
        elements = split_signature(signature)
        required = [p for p in params if not p.has_default]
        # a signature may stop early when --arg/--const name the parameters after it
        named_keys = {item.partition("=")[0].strip() for item in [*named_args, *consts]}
        covered = len(elements) >= len(required) or all(
            p.name in named_keys for p in params[len(elements):] if not p.has_default)
        if not (covered and len(elements) <= len(params)):
            want = f"{len(params)}" if len(required) == len(params) else f"{len(required)} to {len(params)}"
            raise BadInput(
                f"--signature has {len(elements)} elements but {kernel_ref.name} takes {want} "
                f"({', '.join(names)}); parameters after a short signature can be given by --arg/--const NAME=..."
            )
        for i, (p, el) in enumerate(zip(params, elements)):
            args[p.name] = parse_element(el, f"element {i + 1} ({p.name})")
    for item, is_const in [(a, False) for a in named_args] + [(c, True) for c in consts]:
        flag = "--const" if is_const else "--arg"
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep:
            raise BadInput(f"{flag} {item!r}: expected NAME=VALUE")
        if key not in names:
            raise BadInput(f"{flag} {item!r}: {kernel_ref.name} has no parameter {key!r}"
                           f"{did_you_mean(key, names)}; parameters: {', '.join(names)}")
        where = f"{flag} {key}"
        args[key] = ArgSpec("constexpr", value=parse_value(val, where)) if is_const else parse_element(val, where)
    missing = [p.name for p in params if p.name not in args and not p.has_default]
    if missing:
        raise BadInput(
            f"{kernel_ref.name}: no value for {', '.join(missing)}; give --signature with "
            f"{len(params)} elements or --arg/--const NAME=..."
        )
    for p in params:
        a = args.get(p.name)
        if a is None:
            continue
        if p.is_constexpr and a.kind != "constexpr":
            raise BadInput(f"{kernel_ref.name}: parameter {p.name} is tl.constexpr; give its value, not type {a.text()!r}")
    ordered = {p.name: args[p.name] for p in params if p.name in args}
    return KernelSpec(kernel_ref.name, str(kernel_ref.file), fn, ordered)


_BOUND_INT = re.compile(r"^[iu]\d+$")


def check_binding(spec: KernelSpec, signature: dict[str, str], constexprs: dict, attrs: dict) -> None:
    """Compare what the binder produced with what the user asked; explain the differences.

    Raises BadInput where a launch could never produce the requested type; sets
    notes where Triton's rules changed a hint (do_not_specialize, ==1 -> constexpr).
    """
    spec.notes = []
    for i, p in enumerate(spec.params):
        a = spec.args.get(p.name)
        bound = signature.get(p.name)
        if a is None or bound is None:
            continue
        if a.kind in ("pointer", "float", "int") and bound != "constexpr" and bound != a.type:
            raise BadInput(
                f"{spec.kernel}: parameter {p.name} asked as {a.type!r} but a launch binds it as {bound!r} "
                f"(Triton's launch rules and the kernel's annotation decide the type)"
            )
        has_hint = any(k == (i,) for k in attrs)
        if a.kind == "int" and a.align == 16 and not has_hint:
            spec.notes.append(f"{p.name}: divisibility hint dropped, as a launch would (do_not_specialize)")
        if a.kind == "pointer" and a.align >= 16 and not has_hint:
            spec.notes.append(f"{p.name}: alignment hint dropped, as a launch would (do_not_specialize)")
        if a.kind == "int" and a.align == 1 and bound == "constexpr":
            spec.notes.append(f"{p.name}: equal to 1, specialized to a constant as a launch would")


def signatures(file, kernels: list[str]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """(kernel, its parameter rows) for each kernel asked for, or every kernel the file defines."""
    return [(ref, signature_template(ref.fn)) for ref in loader.select_kernels(file, kernels or None, every=True)]


def signature_template(fn) -> list[dict[str, Any]]:
    """The kernel's parameters for `irscope signature`: name, constexpr or not, default, and the
    element a --signature template puts there (pointers *fp32:16 as a placeholder for the real
    dtype, ints i32, annotated scalars as annotated, constexprs their default or <NAME>)."""
    rows = []
    for p in adapter.kernel_params(fn):
        has_default = bool(p.has_default)
        default = p.default if has_default else None
        ann = str(getattr(p, "annotation", "") or "")
        ann = ann.replace("tl.", "").replace("triton.language.", "")
        if p.is_constexpr:
            element = _value_text(default) if has_default else f"<{p.name}>"
        elif ann.startswith("*") or (not ann and p.name.endswith("ptr")):
            element = ann if ann.startswith("*") and ":" in ann else (ann or "*fp32") + ":16"
        elif ann in INT_TYPES or ann in FLOAT_TYPES or ann in BOOL_TYPES:
            element = ann
        elif has_default and isinstance(default, bool):
            element = "i1"
        elif has_default and isinstance(default, float):
            element = "fp32"
        else:
            element = "i32"
        rows.append({"name": p.name, "constexpr": bool(p.is_constexpr), "has_default": has_default,
                     "default": _value_text(default) if has_default else None, "element": element})
    return rows
