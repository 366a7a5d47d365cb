"""Every difference between Triton versions lives here (3.5 … 3.9 supported).

The rest of irscope talks to Triton only through these functions, so a Triton
release that moves an API is fixed in one place. Each function says which
versions behave how. Triton is imported lazily: `import irscope` stays cheap.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from dataclasses import fields
from typing import Any, Callable, Iterator

StageWrapper = Callable[[str, Callable], Callable]


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


@functools.lru_cache(maxsize=None)
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
    import sys
    import types

    if "torch" in sys.modules:
        yield
        return
    stub = types.ModuleType("torch")
    stub.Tensor = type("Tensor", (), {})
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


def pointer_dtype(name: str):
    """'fp16' -> tl.float16: the dtype object Triton's specializer maps back to '*fp16'."""
    import triton.language as tl

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

    names = {_dtype_short_name(v) for v in vars(tl).values() if isinstance(v, tl.dtype)
             and not isinstance(v, tl.pointer_type)}
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
    if ("enable_fp_fusion" in user_options or os.environ.get("TRITON_DEFAULT_FP_FUSION") is not None
            or language.force_disable_fp_fusion):
        return []
    return ["enable_fp_fusion: on by this Triton's default (TRITON_DEFAULT_FP_FUSION unset); Triton 3.10 turns "
            "it off by default: pin it (--set enable_fp_fusion=...) to keep this code"]


def quiet_replaced_warnings() -> None:
    """Triton's warnings that default_option_notes reports in their place."""
    import warnings

    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")


def amd_buffer_ops_enabled() -> bool:
    """AMD's backend gives small allocations tt.pointer_range=32 only with buffer ops on (the default)."""
    from triton import knobs

    return bool(getattr(getattr(knobs, "amd", None), "use_buffer_ops", False))


def cache_invalidating_env() -> dict[str, str]:
    """Env knobs Triton folds into its cache key (e.g. TRITON_HIP_USE_BLOCK_PINGPONG)."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    return dict(get_cache_invalidating_env_vars())


# ---------------------------------------------------------------- compiling


@contextlib.contextmanager
def stage_hook(wrap: StageWrapper) -> Iterator[None]:
    """Wrap every pipeline stage function for the duration of one compile.

    Uses knobs.runtime.add_stages_inspection_hook (3.6+; 3.5 has none, so there
    irscope falls back to wrapping backend.add_stages). From 3.7 Triton also calls
    the hook with no arguments for a cache-key contribution: the wrappers change
    no output, so they contribute nothing and Triton's cache identity is unchanged.
    """
    from triton import knobs

    previous = getattr(knobs.runtime, "add_stages_inspection_hook", _MISSING)

    def hook(*args):
        if not args:
            return ("", "") if previous in (None, _MISSING) else previous()
        if previous not in (None, _MISSING):
            previous(*args)
        stages = args[1]
        for name in list(stages):
            stages[name] = wrap(name, stages[name])

    if previous is _MISSING:  # Triton 3.5
        yield from _patched_add_stages(wrap)
        return
    knobs.runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        knobs.runtime.add_stages_inspection_hook = previous


_MISSING = object()


def _patched_add_stages(wrap: StageWrapper) -> Iterator[None]:
    from triton.compiler import compiler as tc

    original = tc.make_backend

    def make_backend_wrapped(target):
        backend = original(target)
        add = backend.add_stages

        def add_stages(stages, options, *rest):
            add(stages, options, *rest)
            for name in list(stages):
                stages[name] = wrap(name, stages[name])

        backend.add_stages = add_stages
        return backend

    tc.make_backend = make_backend_wrapped
    try:
        yield
    finally:
        tc.make_backend = original


@contextlib.contextmanager
def fresh_compile() -> Iterator[None]:
    """Bypass Triton's on-disk cache so every stage (and the ptxas log) is produced now."""
    from triton import knobs

    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        yield


def run_with_ptxas_log(stage_fn: Callable, *args) -> tuple[Any, str]:
    """Run the cubin stage with ptxas' -v report captured (knobs.nvidia.dump_ptxas_log).

    Triton always runs ptxas with -v; the log is printed to stdout only when the
    knob is on, so it is captured here instead of being printed.
    """
    from triton import knobs

    buf = io.StringIO()
    old = knobs.nvidia.dump_ptxas_log
    knobs.nvidia.dump_ptxas_log = True
    try:
        with contextlib.redirect_stdout(buf):
            result = stage_fn(*args)
    finally:
        knobs.nvidia.dump_ptxas_log = old
    return result, buf.getvalue()


def compile(src, target, options: dict[str, Any]):
    import triton

    return triton.compile(src, target=target.to_triton(), options=options)


def pass_dump_env() -> dict[str, str]:
    """Environment that makes Triton's C++ pass managers dump the IR before each pass, to stderr.

    Read by the C++ side at each pm.enable_debug() (3.5-3.9), so setting it
    in-process works. MLIR_DUMP_PATH is avoided: see capture_fd.
    """
    return {"MLIR_ENABLE_DUMP": "1"}


def cuobjdump_path() -> str:
    from triton import knobs

    return knobs.nvidia.cuobjdump.path


def nvdisasm_path() -> str:
    from triton import knobs

    return knobs.nvidia.nvdisasm.path


def compile_error_types() -> tuple[type, ...]:
    """Frontend errors (a Python error inside the kernel): CompilationError and subclasses."""
    from triton.compiler.errors import CompilationError

    return (CompilationError,)


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set env vars for one compile and restore them; Triton's knobs read env lazily."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def prebuild_driver_utils() -> None:
    """Build (or load from Triton's cache) the driver's C helper module, without importing torch.

    Triton compiles it with the host C compiler on first use of the driver, a second or so with
    a cold cache; the timing process does it in a thread while torch imports. Any failure is
    left for the real first use to report.
    """
    try:
        from triton.backends.nvidia.driver import CudaUtils

        CudaUtils()
    except Exception:  # noqa: BLE001 - no libcuda (an AMD machine), no compiler: reported later
        try:
            from triton.backends.amd.driver import HIPUtils

            HIPUtils()
        except Exception:  # noqa: BLE001
            pass


def prebuild_launcher(kernel) -> None:
    """Build the C launcher a kernel's first launch would build (Triton 3.6 compiles one per
    signature and caches it; 3.9 has one generic launcher), without importing torch."""
    try:
        if kernel.metadata.target.backend == "cuda":
            from triton.backends.nvidia.driver import CudaLauncher as Launcher
        else:
            from triton.backends.amd.driver import HIPLauncher as Launcher
        Launcher(kernel.src, kernel.metadata)
    except Exception:  # noqa: BLE001 - the first launch builds it, or says why not
        pass


# ---------------------------------------------------------------- recipes and pins (recipes.py, pins.py)
#
# Compiling onward from edited IR (pins.py): triton.compile(path, target, options) on a
# `.ttir`/`.ttgir` file parses it (IRSource) and runs only the stages after the file's
# stage (3.5-3.9 alike). For a `.ttgir` file IRSource takes num_warps/num_ctas from the
# module's ttg.num-warps/ttg.num-ctas, overriding the options passed; for `.ttir` the
# options passed decide (checked on 3.6 and 3.9). A stage function's output module
# prints (str) exactly as CompiledKernel.asm holds it, locations included.

# Env knobs a recipe may set: the compile-behaviour knobs of triton.knobs' language group,
# the target vendor's group, and TRITON_DISABLE_LINE_INFO; never paths, dumps, overrides
# or the cache (those would change where irscope reads and writes, not the code).
_RECIPE_KNOB_GROUPS = {"cuda": ("language", "nvidia"), "hip": ("language", "amd")}
_RECIPE_KNOB_EXTRA = {"TRITON_DISABLE_LINE_INFO"}
_RECIPE_KNOB_DENY = r"PATH|DUMP|OVERRIDE|MIR|LOG|LIBCUDA|LIBHIP|LIBDEVICE|MOCK|INTERPRET"


def recipe_env_knobs(backend: str) -> dict[str, str]:
    """Env var -> 'bool' | 'str' for the knobs a recipe may set for this backend ('cuda'/'hip').

    Read from the installed triton.knobs (3.4+: env_bool, env_opt_bool, env_str,
    env_opt_str descriptors with a .key), so a knob a version lacks is refused.
    E.g. TRITON_HIP_USE_ASYNC_COPY is env_bool in 3.6 and env_opt_bool in 3.9.
    """
    import re

    from triton import knobs

    out: dict[str, str] = {}
    groups = _RECIPE_KNOB_GROUPS.get(backend, ("language",)) + ("compilation",)
    for group in groups:
        obj = getattr(knobs, group, None)
        if obj is None:
            continue
        for desc in vars(type(obj)).values():
            key = getattr(desc, "key", None)
            if not isinstance(key, str) or not isinstance(desc, knobs.env_base):
                continue
            if group == "compilation" and key not in _RECIPE_KNOB_EXTRA:
                continue
            if re.search(_RECIPE_KNOB_DENY, key):
                continue
            kind = type(desc).__name__
            out[key] = "bool" if "bool" in kind else "int" if "int" in kind else "str"
    return out


def verify_ir(text: str, ext: str, target) -> str | None:
    """Parse and verify an MLIR module (as triton.compile on a file would); the diagnostic, or None.

    ir.parse_mlir_module(path, context) runs MLIR's verifier after parsing (3.5-3.9);
    on failure it prints the diagnostic to the native stderr and raises RuntimeError.
    """
    import tempfile

    from triton._C.libtriton import ir

    from irscope.core.native_output import capture_native_output

    with tempfile.TemporaryDirectory(prefix="irscope-verify-") as d:
        path = os.path.join(d, f"kernel.{ext}")
        with open(path, "w") as f:
            f.write(text)
        context = ir.context()
        ir.load_dialects(context)
        make_backend(target).load_dialects(context)
        with capture_native_output() as native:
            try:
                ir.parse_mlir_module(path, context)
            except Exception as e:  # RuntimeError('Parse MLIR file failed.')
                failed = str(e) or type(e).__name__
            else:
                failed = None
    if failed is None:
        return None
    diags = [line.split("error:", 1)[1].strip() for line in native.text.splitlines() if "error:" in line]
    return "; ".join(dict.fromkeys(diags)) or failed


def ir_stage_names(fn) -> list[str]:
    """The IR stages a kernel goes through that a pin can edit: no 'ttir' for Gluon kernels (3.5-3.9)."""
    return ["ttgir"] if is_gluon(fn) else ["ttir", "ttgir"]


# ---------------------------------------------------------------- capture (irscope dump SCRIPT)
#
# Running a user's script and recording every kernel Triton compiles while it runs
# (irscope/capture.py). Everything below names Triton internals; each was checked
# on 3.6 and 3.9, and the 3.5 API is the same where not said otherwise.
#
#   JITFunction.run(self, *args, grid, warmup, **kwargs)     every launch, .warmup and
#                                                            autotune benchmark goes through it
#   knobs.runtime.jit_cache_hook / jit_post_compile_hook     called by _do_compile with
#       (key, repr, fn: JitFunctionInfo, compile: {signature, constants, configs: [attrs],
#        specialization_data (JSON, holds the options), device, ...}, is_manual_warmup,
#        already_compiled); a true return from jit_cache_hook skips the compile and the launch
#   knobs.compilation.listener(src, metadata, metadata_group, times, cache_hit)
#   Autotuner.run / .warmup, .configs, .best_config, .cache, .cache_results, .do_bench (a
#       cached_property: the driver's benchmarker on first use), Config.all_kwargs()
#   CompiledKernel.hash / .asm, JITFunction.fn (the Python function: __code__, __globals__)
#   CompiledKernel.__getitem__(grid)                         launches of a kernel .warmup returned
#   runtime.driver.driver._active / set_active               the active driver


def autotuner_type():
    from triton.runtime.autotuner import Autotuner

    return Autotuner


def compiled_kernel_type():
    from triton.compiler.compiler import CompiledKernel

    return CompiledKernel


def driver_base_type():
    from triton.backends.driver import DriverBase

    return DriverBase


@contextlib.contextmanager
def active_driver(drv) -> Iterator[None]:
    """Make `drv` Triton's active driver, and put back exactly what was there.

    DriverConfig.reset_active() would build the default driver, which raises on a
    machine without a GPU, so the private slot is restored instead (3.5-3.9).
    """
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(drv)
    try:
        yield
    finally:
        driver._active = saved


@contextlib.contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Set obj.name for the duration; restore the attribute as it was (or remove it)."""
    had = name in vars(obj) if isinstance(obj, type) else hasattr(obj, name)
    old = vars(obj)[name] if isinstance(obj, type) and had else getattr(obj, name, None)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)


@contextlib.contextmanager
def jit_hooks(cache_hook: Callable, post_compile_hook: Callable, listener: Callable) -> Iterator[None]:
    """Install the three compile hooks, chained after whatever the script's process had set.

    `cache_hook(record) -> bool` gets hook_record(...) and may return True to skip the
    compile (and so the launch). Also, while installed:
    - Triton serializes the specialization for the hooks with json.dumps, which raises
      on constexprs that are not JSON (a Gluon layout, a function): every launch of such
      a kernel would fail once a hook is set (3.6 and 3.9). Those values are given to
      the serializer as their repr; the hook still sees the real values in `constants`.
    - the autotuner's on-disk timing cache is off (knobs.autotuning.cache), so every
      config is benchmarked, and so compiled, as on a first run.
    """
    from triton import knobs
    from triton.runtime import jit as jit_mod

    prev_cache = knobs.runtime.jit_cache_hook
    prev_post = knobs.runtime.jit_post_compile_hook
    prev_listener = knobs.compilation.listener

    def cache(**kwargs):
        skip = bool(prev_cache(**kwargs)) if prev_cache else False
        return bool(cache_hook(hook_record(kwargs))) or skip

    def post(**kwargs):
        if prev_post:
            prev_post(**kwargs)
        post_compile_hook(hook_record(kwargs))

    def listen(**kwargs):
        if prev_listener:
            prev_listener(**kwargs)
        listener(kwargs["src"], kwargs["metadata"], bool(kwargs.get("cache_hit")))

    original = jit_mod.serialize_specialization_data

    def tolerant(name, signature, constants, *rest):
        try:
            return original(name, signature, constants, *rest)
        except TypeError:
            safe = {k: v if _json_ok(v) else repr(v) for k, v in constants.items()}
            try:
                return original(name, signature, safe, *rest)
            except TypeError:
                import json

                options = rest[1] if len(rest) > 1 else None
                return json.dumps({"name": name, "options": getattr(options, "__dict__", {})}, default=repr)

    knobs.runtime.jit_cache_hook = cache
    knobs.runtime.jit_post_compile_hook = post
    knobs.compilation.listener = listen
    jit_mod.serialize_specialization_data = tolerant
    old_autotune_cache = knobs.autotuning.cache
    knobs.autotuning.cache = False
    try:
        yield
    finally:
        knobs.runtime.jit_cache_hook = prev_cache
        knobs.runtime.jit_post_compile_hook = prev_post
        knobs.compilation.listener = prev_listener
        jit_mod.serialize_specialization_data = original
        knobs.autotuning.cache = old_autotune_cache


def _json_ok(value: Any) -> bool:
    import json

    if type(value).__name__ in ("dtype", "constexpr"):  # Triton's serializer converts these itself
        return True
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def hook_record(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The jit_cache_hook / jit_post_compile_hook arguments, as plain fields (3.5-3.9).

    signature {param: type}, constants {path: value}, attrs {path: [[attr, value]]}
    are exactly what the launch binder decided (JITFunction._pack_args); options is
    the backend options' __dict__ (from specialization_data).
    """
    import json

    c = kwargs["compile"]
    try:
        options = json.loads(c["specialization_data"]).get("options") or {}
    except (TypeError, ValueError):
        options = {}
    return {
        "jit": kwargs["fn"].jit_function,
        "key": kwargs["key"],
        "signature": dict(c["signature"]),
        "constants": dict(c["constants"]),
        "attrs": dict(c["configs"][0]) if c.get("configs") else {},
        "options": options,
        "device": c.get("device"),
        "warmup": bool(kwargs.get("is_manual_warmup")),
    }


def compiled_kernel_for(jit, device, key):
    """The CompiledKernel the JIT cached for (device, key), once _do_compile has stored it."""
    try:
        return jit.device_caches[device][0].get(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


def kernel_signature(jit):
    """inspect.Signature of the kernel's Python function (JITFunction.signature, 3.5-3.9)."""
    return jit.signature


def autotune_config_kwargs(config) -> dict[str, Any]:
    """What a Config adds to a launch: its kwargs and num_warps/num_stages/... (Config.all_kwargs)."""
    return dict(config.all_kwargs())


def autotuner_jit(tuner):
    """The JITFunction an Autotuner finally launches (through any @heuristics between)."""
    return unwrap_kernel(tuner)
