"""A kernel specialization: what one launch of a kernel looks like to the compiler.

The user writes it in Triton's AOT convention (`--signature "*fp16:16, i32, 128"`)
or by name (`--arg n=i32:16 --const BLOCK=1024`). irscope turns each element into
a stand-in launch argument (a pointer of a given dtype and address alignment, an
int of a given size and divisibility, a float, a tensor descriptor, a tuple, a constexpr
value) and hands those
to Triton's own binder (adapter.bind). So the specialization — tt.divisibility on
16-byte-aligned pointers and on ints divisible by 16, ints equal to 1 turned into
constexprs, do_not_specialize — is decided by the same code as a real launch.

The element grammar (pointers, ints, floats, tensor descriptors, tuples, constexprs) is
kernel/elements.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from irscope import adapter
from irscope.errors import BadInput, did_you_mean
from irscope.kernel import loader
from irscope.kernel.brackets import check_brackets
from irscope.kernel.elements import (  # noqa: F401  (the grammar's names, for the modules that use spec's)
    BOOL_TYPES,
    FLOAT_TYPES,
    INT_TYPES,
    ArgSpec,
    _value_text,
    check_tma_box,
    parse_element,
    parse_value,
    split_signature,
    split_top,
    stand_in,
)


@dataclass
class KernelSpec:
    """Kernel + one specialization: the 'spec' half of every compile."""

    kernel: str
    file: str
    fn: Any
    args: dict[str, ArgSpec]  # by parameter name, in parameter order
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
            values.append(stand_in(a, self.fn))
        return values


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
            raise BadInput(
                f"{flag} {item!r}: {kernel_ref.name} has no parameter {key.strip()!r}"
                f"{did_you_mean(key.strip(), names)}; parameters: {', '.join(names)}"
            )
    if signature is not None:
        check_brackets(signature)  # an unclosed '(' or 'tensordesc<' is no wrong element count
        elements = split_signature(signature)
        required = [p for p in params if not p.has_default]
        # a signature may stop early when --arg/--const name the parameters after it
        named_keys = {item.partition("=")[0].strip() for item in [*named_args, *consts]}
        covered = len(elements) >= len(required) or all(
            p.name in named_keys for p in params[len(elements) :] if not p.has_default
        )
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
            raise BadInput(
                f"{flag} {item!r}: {kernel_ref.name} has no parameter {key!r}"
                f"{did_you_mean(key, names)}; parameters: {', '.join(names)}"
            )
        where = f"{flag} {key}"
        if is_const and not val.strip().startswith("fn:"):
            args[key] = ArgSpec("constexpr", value=parse_value(val, where))
        else:
            args[key] = parse_element(val, where)
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
        if p.is_constexpr and a.kind not in ("constexpr", "fn"):
            raise BadInput(
                f"{kernel_ref.name}: parameter {p.name} is tl.constexpr; give its value, not type {a.text()!r}"
            )
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
        _check_structure(spec, p.name, a, bound)
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


def _check_structure(spec: KernelSpec, name: str, a: ArgSpec, bound: Any) -> None:
    """A tuple binds as a tuple of the same length (and so on inside); a descriptor as a tensordesc."""
    if a.kind == "tuple":
        if not isinstance(bound, tuple) or len(bound) != len(a.items):
            raise BadInput(
                f"{spec.kernel}: parameter {name} given as the tuple {a.text()} but a launch binds it as {bound!r}"
            )
        for i, (item, b) in enumerate(zip(a.items, bound)):
            _check_structure(spec, f"{name}[{i}]", item, b)
            if item.kind in ("pointer", "float", "int") and b != "constexpr" and b != item.type:
                raise BadInput(f"{spec.kernel}: {name}[{i}] asked as {item.type!r} but a launch binds it as {b!r}")
    elif a.kind == "tensordesc" and not (isinstance(bound, str) and bound.startswith("tensordesc")):
        raise BadInput(f"{spec.kernel}: parameter {name} given as {a.text()} but a launch binds it as {bound!r}")


def check_descriptors(spec: KernelSpec, backend: str) -> None:
    """On NVIDIA a host-side descriptor is a TMA descriptor: its box limits apply (checked before compiling)."""
    if backend != "cuda":
        return

    def walk(name: str, a: ArgSpec) -> None:
        if a.kind == "tensordesc":
            check_tma_box(a, f"{spec.kernel}: parameter {name}")
        for i, item in enumerate(a.items):
            walk(f"{name}[{i}]", item)

    for name, a in spec.args.items():
        walk(name, a)


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
        elif "desc" in p.name.lower() and not ann:
            element = "tensordesc<fp16[64, 64]>"
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
        rows.append(
            {
                "name": p.name,
                "constexpr": bool(p.is_constexpr),
                "has_default": has_default,
                "default": _value_text(default) if has_default else None,
                "element": element,
                "example": element,
            }
        )
    _fill_example(rows, _uses_mma(fn))
    return rows


def _uses_mma(fn) -> bool:
    """Whether the kernel multiplies matrices (tl.dot, Gluon's mma ops, a warp-specialized pipeline): 16-bit then."""
    src = getattr(fn, "src", "") or ""
    return any(word in src for word in ("dot(", "mma", "dot_scaled", "warp_specialize("))


def _fill_example(rows: list[dict[str, Any]], mma: bool = False) -> None:
    """Each row's "example": the template's element made concrete, so the filled signature compiles as
    pasted. Strides: i32:1 for the last of a tensor's strides (stride_am, stride_ak: row-major, the
    inner one is 1), i32:16 for the others; other ints i32:16 (a launch passes a multiple of 16); a
    constexpr without default its _constexpr_example; an unannotated pointer *fp16:16 in a kernel that
    multiplies matrices (`mma`: tensor cores take 16-bit inputs), else the template's *fp32:16."""
    for i, r in enumerate(rows):
        if mma and r["element"] == "*fp32:16":
            r["example"] = "*fp16:16"
        elif r["constexpr"] and not r["has_default"]:
            r["example"] = _constexpr_example(r["name"].upper())
        elif r["element"] == "i32" and not r["constexpr"]:
            key = _stride_tensor(r["name"])
            after = _stride_tensor(rows[i + 1]["name"]) if i + 1 < len(rows) else None
            before = _stride_tensor(rows[i - 1]["name"]) if i > 0 else None
            last_of_several = key is not None and key == before and key != after
            r["example"] = "i32:1" if last_of_several else "i32:16"


_FLAG_WORDS = ("HAS_", "IS_", "USE_", "EVEN_", "ENABLE", "APPLY_", "DO_", "WITH_", "SPECIALIZE", "FLATTEN", "TRANS")


def _constexpr_example(name: str) -> str:
    """A constexpr's value for the example, by its name: a flag (HAS_BIAS, WARP_SPECIALIZE) False (the
    plain path), stages 2, warps 4, a block size 64, a group 8, any other 16."""
    if any(name.startswith(w) or (not w.endswith("_") and w in name) for w in _FLAG_WORDS):
        return "False"
    if "STAGE" in name:
        return "2"
    if "WARPS" in name:
        return "4"
    return "64" if "BLOCK" in name or "TILE" in name else "8" if "GROUP" in name else "16"


def _stride_tensor(name: str) -> str | None:
    """Which tensor a stride parameter belongs to (stride_am -> stride_a, x_stride_1 -> x_stride), or None."""
    low = name.lower()
    if "stride" not in low:
        return None
    head, sep, tail = low.rpartition("_")
    if sep and len(tail) == 1 and "stride" in head:
        return head  # x_stride_0, stride_x_m
    if low.startswith("stride_") and len(low) > len("stride_") + 1:
        return low[:-1]  # stride_am, stride_cn
    return low
