"""Triton's compile pipeline as irscope drives it: stage hooks, the compile call, env knobs, tools
(ptxas, nvdisasm) and the knobs recipes may set.

Every version difference in these lives here (3.5 ... 3.9).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from irscope.adapter.binding import is_gluon

StageWrapper = Callable[[str, Callable], Callable]


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

    previous: Any = getattr(knobs.runtime, "add_stages_inspection_hook", _MISSING)

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
# one patch of triton.compile's make_backend at a time: two threads patching and restoring it out of order (a
# capture's launch check and the script's Inductor compile being recorded) would leave a stale wrapper in place
_patching = threading.RLock()


def _patched_add_stages(wrap: StageWrapper, on_start: Callable[[], None] | None = None) -> Iterator[None]:
    with _patching:
        yield from _patched_once(wrap, on_start)


def _patched_once(wrap: StageWrapper, on_start: Callable[[], None] | None) -> Iterator[None]:
    from triton.compiler import compiler as tc

    original = tc.make_backend

    def make_backend_wrapped(target):
        if on_start is not None:  # triton.compile's first step: the compile starts here
            on_start()
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
def stages_of_compiles_wrapped(wrap: StageWrapper, on_start: Callable[[], None] | None = None) -> Iterator[None]:
    """Wrap every stage of the compiles triton.compile starts meanwhile (through its make_backend),
    leaving knobs.runtime.add_stages_inspection_hook alone: from 3.7 a set hook enters every JIT
    launch's kernel-cache key, so launches in other threads while it is set would get other keys
    (capture's launch check compiles while the script's threads launch). `on_start()` hears each
    compile begin (before its front end)."""
    yield from _patched_add_stages(wrap, on_start)


def compile_identity(src, target, options: dict[str, Any]) -> str | None:
    """What decides triton.compile(src, target, options)'s output, as one hash: the kernel's code (its JIT
    cache key, callees included), the signature, constexprs and attributes, the backend (target, ptxas), the
    parsed options and the cache-invalidating environment; None where this Triton lays them out otherwise.

    Triton's own cache key hashes the same things but as Python prints them (str(attrs): a list or a tuple,
    an empty attribute list or none), so two routes to one compile (Inductor's, irscope's bind) get two keys;
    this one is written out canonically, so only a real difference tells them apart. `target` is irscope's
    Target or Triton's GPUTarget; `options` a dict of option fields (others, e.g. a metadata's, are left out)."""

    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return sorted((str(plain(k)), plain(v)) for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x if isinstance(x, (str, int, float, bool)) or x is None else str(x)

    try:
        from triton.compiler import compiler as tc

        backend = tc.make_backend(target.to_triton() if hasattr(target, "to_triton") else target)
        fields = {f.name for f in dataclasses.fields(backend.parse_options({}))}
        given = {k: v for k, v in dict(options, **src.parse_options()).items() if k in fields}
        parsed = backend.parse_options(given)
        key = lambda v: v.cache_key if hasattr(v, "cache_key") else str(v)
        doc = {
            "backend": backend.hash(),
            "fn": src.fn.cache_key,
            "signature": plain(src.signature),
            "constants": sorted((str(plain(k)), key(v)) for k, v in src.constants.items()),
            "attrs": sorted((str(plain(k)), plain(v)) for k, v in (src.attrs or {}).items() if v),
            "options": plain(parsed.__dict__),
            "env": plain(dict(tc.get_cache_invalidating_env_vars())),
        }
    except Exception:  # noqa: BLE001  another Triton's layout: no identity, so no two compiles are taken for one
        return None
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


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
    assigned = "dump_ptxas_log" in vars(knobs.nvidia)  # set by assignment before (runtime.knobs_set_in_python)
    old = knobs.nvidia.dump_ptxas_log
    knobs.nvidia.dump_ptxas_log = True
    try:
        with contextlib.redirect_stdout(buf):
            result = stage_fn(*args)
    finally:
        if assigned:
            knobs.nvidia.dump_ptxas_log = old
        else:  # left as it was, unassigned: a capture's script compiling here keeps its dumps in workers
            vars(knobs.nvidia).pop("dump_ptxas_log", None)
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


def compile_error_types() -> tuple[type[Exception], ...]:
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


# ---------------------------------------------------------------- recipes and pins (steer/)
#
# Compiling onward from edited IR (steer/pinset.py): triton.compile(path, target, options) on a
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


def ir_stage_names(fn) -> list[str]:
    """The IR stages a kernel goes through that a pin can edit: no 'ttir' for Gluon kernels (3.5-3.9)."""
    return ["ttgir"] if is_gluon(fn) else ["ttir", "ttgir"]


# Outputs a Triton puts beside its stages that are no compile stage: Meta's fork (fbtriton 3.7) adds the
# launcher's metadata and C source to CompiledKernel.asm. irscope keeps them as files, not stages.
NOT_STAGES = ("launch_metadata", "launcher_src")


def split_outputs(asm: dict) -> tuple[dict, dict]:
    """(the compiler's stages, the other outputs) of a compiled kernel's asm."""
    return ({k: v for k, v in asm.items() if k not in NOT_STAGES}, {k: v for k, v in asm.items() if k in NOT_STAGES})
