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

AOTInductor (`torch._inductor.aoti_compile_and_package`, `torch._inductor.aot_compile`, which
`torch._export.aot_compile` calls) lowers through the same Inductor, so its first call sets Inductor up
as a first torch.compile does. torch._inductor loads lazily (about 2 s): when it is not loaded yet, a
finder on sys.meta_path wraps the two functions right after `import torch._inductor` runs (however the
script reaches it), and is taken off with everything else. While an AOTI call runs, `aoti_call()` says
which (the entry and the package path it was asked for, or the one it returned), so the graphs lowered
meanwhile are labelled AOTI's (capture/inductor.py).

`in_process(extra)`: `extra(torch, undo)` adds what one mode needs on top, when Inductor is set up
(the stand-in's retargeting and device shims: standin/layers.py, standin/aoti.py); then the observers
(capture's hooks into Inductor: capture/inductor.py) are entered. Everything is put back on exit.

This module is in the standin layer because the stand-in GPU (standin/gpu.py) uses it too;
capture/runner.py enters it by itself for a real GPU run.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.abc
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
AOTI_ENTRIES = ("aoti_compile_and_package", "aot_compile")  # torch._inductor's AOTInductor functions


@dataclass
class AotiCall:
    """One AOTInductor call of the script: the function it called and the package it went into (the
    .pt2 path it asked for, else the path the call returned; None for a buffer, or before it returned)."""

    entry: str
    package: str | None = None
    built: bool | None = None  # whether the call returned (its package or library written)


_aoti_call: contextvars.ContextVar[AotiCall | None] = contextvars.ContextVar("irscope_aoti_call", default=None)


def aoti_call() -> AotiCall | None:
    """The AOTInductor call running in this context (None outside one)."""
    return _aoti_call.get()


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


def _package_asked(entry: str, args: tuple, kwargs: dict[str, Any]) -> str | None:
    """The .pt2 path an aoti_compile_and_package call asks for (None: derived by torch, or a buffer)."""
    if entry != "aoti_compile_and_package":
        return None
    asked = kwargs.get("package_path", args[1] if len(args) > 1 else None)
    return os.fspath(asked) if isinstance(asked, (str, os.PathLike)) else None


def _aoti_entry(entry: str, original: Callable[..., Any], setup: Callable[[], None]) -> Callable[..., Any]:
    """torch._inductor.<entry> that sets Inductor up first and runs as an AotiCall (see the module doc)."""

    @functools.wraps(original)
    def call(*args, **kwargs):
        setup()
        if _aoti_call.get() is not None:  # aot_compile inside aoti_compile_and_package: one call
            return original(*args, **kwargs)
        record = AotiCall(entry, _package_asked(entry, args, kwargs))
        token = _aoti_call.set(record)
        try:
            out = original(*args, **kwargs)
        finally:
            _aoti_call.reset(token)
        if isinstance(out, (str, os.PathLike)):
            record.package = record.package or os.fspath(out)
        record.built = True
        return out

    call._irscope_aoti = True  # type: ignore[attr-defined]
    return call


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after the module `name` is first imported (see the module doc)."""

    def __init__(self, name: str, then: Callable[[Any], None]):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
            if spec is not None:
                return spec
        return None


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, then: Callable[[Any], None]):
        self.loader, self.then = loader, then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, get_resource_reader, ...: the loader's
        return getattr(self.loader, name)


@contextlib.contextmanager
def _aoti_entries(setup: Callable[[], None]) -> Iterator[None]:
    """torch._inductor's AOTInductor functions wrapped (_aoti_entry), now or once it is imported."""
    wrapped: list[tuple[Any, str, Any]] = []

    def wrap(module: Any) -> None:
        for name in AOTI_ENTRIES:
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_irscope_aoti", False):
                setattr(module, name, _aoti_entry(name, original, setup))
                wrapped.append((module, name, original))

    finder = None
    if "torch._inductor" in sys.modules:
        wrap(sys.modules["torch._inductor"])
    else:
        finder = _AfterImport("torch._inductor", wrap)
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for module, name, original in reversed(wrapped):
            if getattr(getattr(module, name, None), "_irscope_aoti", False):
                setattr(module, name, original)


@contextlib.contextmanager
def _inductor_in_process(torch: Any, extra: Callable[[Any, contextlib.ExitStack], None] | None) -> Iterator[None]:
    """torch.compile and AOTInductor's functions patched to set Inductor up (settings, `extra`, observers)
    on the first call of either."""
    original_compile = torch.compile
    undo = contextlib.ExitStack()
    set_up: list[bool] = []  # once, on the first call

    def setup() -> None:
        if set_up:
            return
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
        setup()
        if model is None:  # @torch.compile(mode=...)
            return lambda m: compile(m, *args, **kwargs)
        return original_compile(model, *args, **kwargs)

    with undo, triton_runtime.patched(torch, "compile", compile), _aoti_entries(setup):
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


def settings_note(graphs: int, who: str = "torch.compile (Inductor)") -> str | None:
    """The summary's line on what irscope changed in Inductor (None when it lowered no graph)."""
    if not graphs:
        return None
    line = (
        f"{who} lowered {graphs} graph{'s' if graphs != 1 else ''} in this process "
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
