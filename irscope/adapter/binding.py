"""Triton's side of a spec: versions, kernels, backends and their options, the launch binder, sources.

Every version difference in these lives here (3.5 ... 3.9); triton is imported inside the
functions so that `import irscope` stays cheap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from irscope.errors import BadInput


def triton_version() -> str:
    import triton

    return triton.__version__


def version_tuple() -> tuple[int, int]:
    major, minor = triton_version().split(".")[:2]
    return int(major), int(minor)


# ---------------------------------------------------------------- kernels


def jit_function_type():
    from triton.runtime.jit import JITFunction

    return JITFunction


def unwrap_kernel(obj: Any):
    """The JITFunction under Autotuner/Heuristics wrappers, or None if obj is no kernel."""
    JITFunction = jit_function_type()
    seen = 0
    while obj is not None and seen < 8:
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
        seen += 1
    return None


def is_gluon(fn) -> bool:
    """Gluon kernels are GluonJITFunction (3.5+), which answer is_gluon()."""
    probe = getattr(fn, "is_gluon", None)
    return bool(probe()) if callable(probe) else False


def kernel_params(fn) -> list:
    """Triton's KernelParam list (name, is_constexpr, default, annotation...)."""
    return list(fn.params)


def kernel_source(fn) -> str:
    return "".join(getattr(fn, "raw_src", None) or [fn.src])


def kernel_cache_key(fn) -> str:
    """Hash of the kernel's source and everything it calls (Triton's own)."""
    return fn.cache_key


# ---------------------------------------------------------------- backends and options


@functools.cache
def make_backend(target):
    """One backend object per target per process (Triton's own make_backend builds a new one)."""
    from triton.compiler import make_backend as _make

    quiet_replaced_warnings()  # before the first parse_options, which may warn
    return _make(target.to_triton())


def options_fields(target) -> dict[str, Any]:
    """name -> dataclasses.Field of the backend's options class (CUDAOptions/HIPOptions)."""
    backend = make_backend(target)
    cls = type(backend.parse_options({}))
    return {f.name: f for f in fields(cls)}


def default_options(target) -> dict[str, Any]:
    return dict(make_backend(target).parse_options({}).__dict__)


def launch_kwargs(fn, user_options: dict[str, Any]) -> dict[str, Any]:
    """The keyword options JITFunction.run adds before binding, as the installed version does.

    3.5-3.8: debug, instrumentation_mode. 3.9 adds fpsan_homomorphic_casts.
    """
    from triton import knobs

    kwargs = dict(user_options)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    if hasattr(knobs.compilation, "instrumentation_mode"):
        kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    if hasattr(knobs.compilation, "fpsan_homomorphic_casts"):
        kwargs["fpsan_homomorphic_casts"] = knobs.compilation.fpsan_homomorphic_casts
    return kwargs


def bind(fn, target, args: list, kwargs: dict[str, Any]):
    """Specialize like a real launch: Triton's own binder and _pack_args, no driver.

    Returns (options, signature, constexprs, attrs) exactly as JITFunction.run
    hands them to ASTSource/compile. This is the fidelity guarantee: the same code
    decides pointer alignment, ints divisible by 16 and ints equal to 1.
    """
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    call_args, call_kwargs = _option_named_params(fn, args, kwargs)
    with _no_torch_import():
        bound_args, specialization, leftover = binder(*call_args, **call_kwargs)
    return fn._pack_args(backend, kwargs, bound_args, specialization, leftover)


def _option_named_params(fn, args: list, kwargs: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    """A kernel parameter named like an option (the softmax tutorial's `num_stages: tl.constexpr`).

    A launch passes such a value once, by keyword, and it sets both the parameter and the
    option (the binder binds it, parse_options reads it). Given positionally here as well,
    the binder would get it twice; so from the first such parameter on, the parameters go
    by keyword (their own values), and the options still come from `kwargs`.
    """
    names = [p.name for p in fn.params]
    clash = [names.index(k) for k in kwargs if k in names and names.index(k) < len(args)]
    if not clash:
        return list(args), dict(kwargs)
    first = min(clash)
    call_kwargs = dict(kwargs)
    call_kwargs.update({names[i]: args[i] for i in range(first, len(args))})
    return list(args[:first]), call_kwargs


@contextlib.contextmanager
def _no_torch_import() -> Iterator[None]:
    """Keep Triton's native specializer from importing torch (seconds, and the dump path must not).

    native_specialize_impl imports torch to test isinstance(arg, torch.Tensor) on the
    first non-scalar argument (3.6 and 3.9 alike). While torch is not loaded, a stub
    module with an unrelated Tensor class answers that test with False, and the
    specializer reads our stand-in pointers by duck typing (data_ptr, dtype), as it
    does for any tensor-like object. Real torch tensors bound later are unaffected
    (checked on 3.6 and 3.9).
    """

    if "torch" in sys.modules:
        yield
        return
    stub = types.ModuleType("torch")
    stub.Tensor = type("Tensor", (), {})  # type: ignore[attr-defined]  # a module made at run time
    sys.modules["torch"] = stub
    try:
        yield
    finally:
        if sys.modules.get("torch") is stub:
            del sys.modules["torch"]


def make_source(fn, signature, constexprs, attrs):
    """ASTSource, or GluonASTSource for Gluon kernels (what create_binder picks)."""
    if is_gluon(fn):
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs, attrs)
    from triton.compiler import ASTSource

    return ASTSource(fn, signature, constexprs, attrs)


def tensor_descriptor(
    base, shape: list[int], strides: list[int], block: list[int], layout, padding: str, tf32: bool, gluon: bool
):
    """A host-side TensorDescriptor as a script would build it: triton.tools' for Triton kernels,
    Gluon's (with its NVMMASharedLayout, the default for the block when none is given) for Gluon.

    3.6 has no round_f32_to_tf32 field (3.9 and fbtriton 3.7 do); asking for it there is refused.
    """
    if gluon:
        from triton.experimental.gluon.language import NVMMASharedLayout
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        if layout is None:
            layout = NVMMASharedLayout.get_default_for(block, base.dtype)
        extra = {"layout": layout}
    else:
        from triton.tools.tensor_descriptor import TensorDescriptor

        extra = {}
    names = {f.name for f in fields(TensorDescriptor)}
    if tf32:
        if "round_f32_to_tf32" not in names:
            raise BadInput(f"round_f32_to_tf32: this Triton ({triton_version()}) has no such descriptor field")
        extra["round_f32_to_tf32"] = True
    try:
        return TensorDescriptor(base, shape, strides, block, padding=padding, **extra)
    except (AssertionError, ValueError, TypeError) as e:
        raise BadInput(f"tensordesc {block}: Triton's TensorDescriptor refuses it: {e}") from None


# element spellings Triton's str_to_ty accepts beside the canonical one: Inductor writes a bool tensor's
# pointer as '*i1' (Triton's own launcher says '*u1'); both are a pointer to int1
POINTER_ALIASES = {"i1": "u1"}


def canonical_pointer_dtype(name: str) -> str:
    """'i1' -> 'u1': the spelling Triton's launcher gives the same element type."""
    return POINTER_ALIASES.get(name, name)


def pointer_dtype(name: str):
    """'fp16' -> tl.float16: the dtype object Triton's specializer maps back to '*fp16'."""
    import triton.language as tl

    name = canonical_pointer_dtype(name)
    for value in vars(tl).values():
        if isinstance(value, tl.dtype) and not isinstance(value, tl.pointer_type):
            if _dtype_short_name(value) == name:
                return value
    return None


def _dtype_short_name(dtype) -> str:
    from triton.runtime.jit import type_canonicalisation_dict

    return type_canonicalisation_dict.get(str(dtype), str(dtype))


def pointer_dtype_names() -> list[str]:
    import triton.language as tl

    names = {
        _dtype_short_name(v)
        for v in vars(tl).values()
        if isinstance(v, tl.dtype) and not isinstance(v, tl.pointer_type)
    }
    names |= {alias for alias, canonical in POINTER_ALIASES.items() if canonical in names}
    return sorted(n for n in names if n and "*" not in n)


def default_option_notes(user_options: dict[str, Any]) -> list[str]:
    """Defaults a version decides that the user should know about, said once per dump.

    Triton 3.9 enables FP fusion by default while TRITON_DEFAULT_FP_FUSION is unset and warns
    (once per process, with its source line) that 3.10 will disable it; irscope says it as a
    note in the summary instead, so every dump of such a kernel says it, cached or not.
    """
    from triton import knobs

    language = getattr(knobs, "language", None)
    if language is None or not hasattr(language, "fp_fusion_enabled"):  # 3.5 - 3.8: no such default
        return []
    if (
        "enable_fp_fusion" in user_options
        or os.environ.get("TRITON_DEFAULT_FP_FUSION") is not None
        or language.force_disable_fp_fusion
    ):
        return []
    return [
        "enable_fp_fusion: on by this Triton's default (TRITON_DEFAULT_FP_FUSION unset); Triton 3.10 turns "
        "it off by default: pin it (--set enable_fp_fusion=...) to keep this code"
    ]


def quiet_replaced_warnings() -> None:
    """Triton's warnings that default_option_notes reports in their place."""

    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")


def amd_buffer_ops_enabled() -> bool:
    """AMD's backend gives small allocations tt.pointer_range=32 only with buffer ops on (the default)."""
    from triton import knobs

    return bool(getattr(getattr(knobs, "amd", None), "use_buffer_ops", False))


def cache_invalidating_env() -> dict[str, str]:
    """Env knobs Triton folds into its cache key (e.g. TRITON_HIP_USE_BLOCK_PINGPONG)."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    return dict(get_cache_invalidating_env_vars())
