"""Triton's runtime as capture meets it: the JIT's hook slots, drivers, autotuners, compiled kernels.

Every version difference in these lives here (3.5 ... 3.9).
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

from irscope.adapter.binding import unwrap_kernel

# ---------------------------------------------------------------- capture (irscope capture SCRIPT)
#
# Running a user's script and recording every kernel Triton compiles while it runs
# (irscope/capture/). Everything below names Triton internals; each was checked
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


def launches_constexprs(compiled) -> bool:
    """Whether a CompiledKernel's launcher takes the constexpr arguments too (3.5 - 3.9, the fork alike).

    One compiled from Python (ASTSource) is launched with every parameter, constexprs included, as the
    JIT does; one compiled from IR text (IRSource: a dump's pinned TTGIR, TRITON_KERNEL_OVERRIDE) has
    only the IR function's arguments, so the constexprs (and ints specialized to 1) must be left out.
    """
    return hasattr(compiled.src, "fn")


# namespaces of triton.knobs whose values reach a compile (autotuning, cache and runtime hold hooks and
# caches, which the dump sets up itself)
COMPILE_KNOBS = ("compilation", "language", "nvidia", "amd")


def knobs_set_in_python() -> list[str]:
    """Knobs this process set by assignment (`triton.knobs.compilation.always_compile = True`), not by
    environment: a worker process started now would not see them ('compilation.always_compile').

    A knob namespace keeps an assigned value in its instance dict, under the name of a class-level env
    descriptor (triton.knobs.env_base; 3.5-3.9 and the fork)."""
    try:
        from triton import knobs
    except ImportError:
        return []
    found = []
    for ns_name in COMPILE_KNOBS:
        ns = getattr(knobs, ns_name, None)
        if ns is None:
            continue
        for name in vars(ns):
            if isinstance(inspect.getattr_static(type(ns), name, None), knobs.env_base):
                found.append(f"{ns_name}.{name}")
    return found
