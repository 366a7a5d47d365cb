"""Kernel generators (Helion, torch.compile's Inductor) compile in irscope's process, off their caches.

Both compile Triton kernels the script never names. On a GPU they farm the work out (Helion
benchmarks each config in a spawned subprocess and precompiles in forked ones; Inductor compiles
in a pool of worker processes) and serve later runs from their own caches (Inductor's FX graph,
AOT autograd and autotune caches hand back a finished module, and its static CUDA launcher loads
a cubin through the CUDA driver without triton.compile). irscope's hooks live in its own process,
and a cache hit compiles nothing, so while a capture runs, in BOTH modes (a real GPU run and the
stand-in GPU):

    Helion     HELION_AUTOTUNE_BENCHMARK_SUBPROCESS=0, HELION_AUTOTUNE_PRECOMPILE=0 (no fork),
               HELION_AUTOTUNE_PROGRESS_BAR=0, HELION_CACHE_DIR=<temp> (a cached best config
               would skip the autotuner's compiles); a variable the user set is kept
    Inductor   on the first torch.compile (torch._dynamo and torch._inductor load then):
               compile_threads=1 (no worker pool), the FX graph, AOT autograd and autotune caches
               off, the static CUDA launcher (and the fast launcher built on it) off, so every
               kernel of every graph goes through triton.compile here (Triton's own cache may
               still serve the binary: the compile call, which irscope captures, happens). A
               setting this torch does not have is skipped, and named in `missing`.

`in_process(extra)`: `extra(torch, undo)` adds what one mode needs on top, when Inductor is set up
(the stand-in's retargeting and device shims: standin/layers.py); then the observers (capture's
hooks into Inductor: capture/inductor.py) are entered. Everything is put back on exit.

This module is in the standin layer because the stand-in GPU (standin/gpu.py) uses it too;
capture/runner.py enters it by itself for a real GPU run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime

HELION_ENV = {
    "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS": "0",
    "HELION_AUTOTUNE_PRECOMPILE": "0",
    "HELION_AUTOTUNE_PROGRESS_BAR": "0",
}
INDUCTOR_CONFIG = {
    "compile_threads": 1,
    "fx_graph_cache": False,
    "fx_graph_remote_cache": False,
    "autotune_local_cache": False,
    "autotune_remote_cache": False,
    "bundled_autotune_remote_cache": False,
    "use_static_triton_launcher": False,
    "use_fast_triton_launcher": False,
    "autotune_in_subproc": False,
}
FUNCTORCH_CONFIG = {"enable_autograd_cache": False, "enable_remote_autograd_cache": False}
# the settings without which irscope would miss kernels (the rest are remote caches or newer knobs)
ESSENTIAL = (
    "compile_threads",
    "fx_graph_cache",
    "autotune_local_cache",
    "use_static_triton_launcher",
    "enable_autograd_cache",
)

missing: list[str] = []  # Inductor settings this torch lacks (the last setup's), for the notes
_inductor_observers: list[Any] = []  # capture's hooks into Inductor (capture/inductor.py), set up with it


@contextlib.contextmanager
def env_unless_set(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` set where the user has not set them; put back on exit."""
    added = [k for k in values if k not in os.environ]
    for k in added:
        os.environ[k] = values[k]
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


@contextlib.contextmanager
def config_set(cfg: Any, name: str, value: Any) -> Iterator[None]:
    """cfg.name = value, put back on exit."""
    old = getattr(cfg, name)
    setattr(cfg, name, value)
    try:
        yield
    finally:
        setattr(cfg, name, old)


@contextlib.contextmanager
def observe_inductor(install: Callable[[], Any]) -> Iterator[None]:
    """While entered, `install()` (a context manager) is entered once Inductor is set up (the
    script's first torch.compile; torch._inductor is loaded then), and left with it."""
    _inductor_observers.append(install)
    try:
        yield
    finally:
        _inductor_observers.remove(install)


def apply_inductor_settings(undo: contextlib.ExitStack) -> list[str]:
    """Inductor's and AOT autograd's config as in the module doc, undone by `undo`; the names this torch
    does not have (a private config: checked one by one, never assumed)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    lacking = []
    for cfg, values in ((inductor_config, INDUCTOR_CONFIG), (functorch_config, FUNCTORCH_CONFIG)):
        for name, value in values.items():
            if hasattr(cfg, name):
                undo.enter_context(config_set(cfg, name, value))
            else:
                lacking.append(name)
    return lacking


@contextlib.contextmanager
def _inductor_in_process(torch: Any, extra: Callable[[Any, contextlib.ExitStack], None] | None) -> Iterator[None]:
    """torch.compile patched to set Inductor up (settings, `extra`, observers) on its first call."""
    original_compile = torch.compile
    undo = contextlib.ExitStack()
    set_up: list[bool] = []  # once, on the first call

    def setup() -> None:
        import torch._dynamo  # noqa: F401

        set_up.append(True)
        missing[:] = apply_inductor_settings(undo)
        tqdm = sys.modules.get("tqdm")
        if tqdm is not None and hasattr(tqdm, "tqdm"):  # torch.fx's Interpreter makes a (disabled) tqdm bar:
            undo.enter_context(config_set(tqdm.tqdm, "monitor_interval", 0))  # no monitor thread left running
        if extra is not None:
            extra(torch, undo)
        for install in list(_inductor_observers):
            undo.enter_context(install())

    def compile(model=None, *args, **kwargs):
        if not set_up:
            setup()
        if model is None:  # @torch.compile(mode=...)
            return lambda m: compile(m, *args, **kwargs)
        return original_compile(model, *args, **kwargs)

    with undo, triton_runtime.patched(torch, "compile", compile):
        yield


@contextlib.contextmanager
def in_process(extra: Callable[[Any, contextlib.ExitStack], None] | None = None) -> Iterator[None]:
    """Helion and Inductor compile in this process, off their caches (see the module doc)."""
    cache = tempfile.mkdtemp(prefix="irscope-layers-")
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(env_unless_set(dict(HELION_ENV, HELION_CACHE_DIR=os.path.join(cache, "helion"))))
            if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
                import torch

                stack.enter_context(_inductor_in_process(torch, extra))
            yield
    finally:
        missing.clear()
        shutil.rmtree(cache, ignore_errors=True)


def settings_note(graphs: int) -> str | None:
    """The summary's line on what irscope changed in Inductor (None when it lowered no graph)."""
    if not graphs:
        return None
    line = (
        f"torch.compile (Inductor) lowered {graphs} graph{'s' if graphs != 1 else ''} in this process "
        f"(compile_threads=1: no worker processes; its FX graph, AOT autograd and autotune caches and its "
        f"static CUDA launcher off, so every kernel was generated and compiled here, none served from a cache)"
    )
    lacking = [n for n in missing if n in ESSENTIAL]
    if lacking:
        line += (
            f"; this torch has no Inductor setting {', '.join(lacking)}: kernels it serves another way "
            f"may be missing from the capture"
        )
    return line
