"""Kernel generators on the stand-in GPU: Helion and torch.compile (Inductor) compile in-process.

Both compile Triton kernels the script never names: Helion from a `@helion.kernel` function,
Inductor from a torch.compile'd model. On a GPU they farm the work out (Helion benchmarks each
config in a spawned subprocess and precompiles in forked ones; Inductor compiles in a pool of
worker processes) and serve later runs from their own caches. irscope's hooks live in its own
process, and a cache hit compiles nothing, so while the stand-in is up:

    Helion     HELION_AUTOTUNE_BENCHMARK_SUBPROCESS=0, HELION_AUTOTUNE_PRECOMPILE=0 (no fork),
               HELION_AUTOTUNE_PROGRESS_BAR=0, HELION_CACHE_DIR=<temp> (a cached best config
               would skip the autotuner's compiles); a variable the user set is kept
    Inductor   on the first torch.compile (torch._dynamo and torch._inductor load then):
               compile_threads=1 (no worker pool), the FX graph, AOT autograd and autotune caches
               off, the static CUDA launcher off (it loads cubins through the CUDA driver), so
               every kernel of every graph goes through triton.compile here. Dynamo fakeifies
               the stand-in's CPU tensors as cuda:0 (its guards read the real tensors, so they
               hold), and the stand-in's torch-function and dispatch modes are off while a
               compiled function runs (Dynamo would otherwise trace irscope's own handlers,
               and skips any frame under a dispatch mode): inside it, the generated wrapper
               allocates with empty_strided_cuda, which makes CPU tensors here. Put back on exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime

_HELION_ENV = {"HELION_AUTOTUNE_BENCHMARK_SUBPROCESS": "0", "HELION_AUTOTUNE_PRECOMPILE": "0",
               "HELION_AUTOTUNE_PROGRESS_BAR": "0"}
INDUCTOR_CONFIG = {"compile_threads": 1, "fx_graph_cache": False, "fx_graph_remote_cache": False,
                   "autotune_local_cache": False, "autotune_remote_cache": False,
                   "bundled_autotune_remote_cache": False, "use_static_triton_launcher": False,
                   "autotune_in_subproc": False}
_FUNCTORCH_CONFIG = {"enable_autograd_cache": False, "enable_remote_autograd_cache": False}


@contextlib.contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` set where the user has not set them; put back on exit."""
    added = [k for k in values if k not in os.environ]
    for k in added:
        os.environ[k] = values[k]
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _modes_off(fn):
    """`fn` run with the stand-in's torch-function and dispatch modes off the stacks (the modes
    the script pushed stay), put back after."""
    import torch
    from torch.overrides import _get_current_function_mode_stack

    @functools.wraps(fn)
    def run(*args, **kwargs):
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode, _push_mode

        tf = _get_current_function_mode_stack()
        mine = [m for m in tf if getattr(m, "_irscope_standin", False)]
        dm = _get_current_dispatch_mode_stack()
        dmine = [m for m in dm if getattr(m, "_irscope_standin", False)]
        if not mine and not dmine:
            return fn(*args, **kwargs)
        for _ in tf:
            torch._C._pop_torch_function_stack()
        for m in tf:
            if m not in mine:
                torch._C._push_on_torch_function_stack(m)
        for _ in dm:
            _pop_mode()
        for m in dm:
            if m not in dmine:
                _push_mode(m)
        try:
            return fn(*args, **kwargs)
        finally:
            for _ in _get_current_function_mode_stack():
                torch._C._pop_torch_function_stack()
            for m in tf:
                torch._C._push_on_torch_function_stack(m)
            for _ in _get_current_dispatch_mode_stack():
                _pop_mode()
            for m in dm:
                _push_mode(m)

    return run


@contextlib.contextmanager
def _inductor_standin(torch: Any) -> Iterator[None]:
    """torch.compile as on the GPU, in this process (see the module's doc): set up on first use."""
    original_compile = torch.compile
    undo = contextlib.ExitStack()

    def setup() -> None:
        import torch._dynamo  # noqa: F401
        from torch._dynamo import eval_frame
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
        from torch._subclasses import meta_utils

        for cfg, values in ((inductor_config, INDUCTOR_CONFIG), (functorch_config, _FUNCTORCH_CONFIG)):
            for name, value in values.items():
                if hasattr(cfg, name):
                    undo.enter_context(_config(cfg, name, value))
        cuda0 = torch.device("cuda", 0)
        describe = meta_utils.MetaTensorDescriber.describe_tensor

        def describe_tensor(self, t, *args, **kwargs):
            desc = describe(self, t, *args, **kwargs)
            if getattr(desc.device, "type", None) == "cpu":
                desc = dataclasses.replace(desc, device=cuda0)  # a stand-in tensor: on "the GPU"
            return desc

        if os.environ.get("IRSCOPE_INDUCTOR_FAKE_CUDA") == "1":  # prototype, see the note below
            undo.enter_context(triton_runtime.patched(meta_utils.MetaTensorDescriber, "describe_tensor",
                                                      describe_tensor))
        enter = eval_frame._TorchDynamoContext.__call__

        def dynamo_call(self, fn, *args, **kwargs):  # what torch.compile'd functions and modules run
            out = enter(self, fn, *args, **kwargs)
            return out if isinstance(out, torch.nn.Module) or not callable(out) else _modes_off(out)

        undo.enter_context(triton_runtime.patched(eval_frame._TorchDynamoContext, "__call__", dynamo_call))
        guards = torch._C._dynamo.guards
        cpu_empty = guards._empty_strided_cpu
        undo.enter_context(triton_runtime.patched(guards, "_empty_strided_cuda",
                                                  lambda size, stride, dtype, *a: cpu_empty(size, stride, dtype)))
        if not hasattr(torch._C, "_cuda_getCurrentRawStream"):
            torch._C._cuda_getCurrentRawStream = lambda device=None: 0
            undo.callback(delattr, torch._C, "_cuda_getCurrentRawStream")

    def compile(model=None, *args, **kwargs):
        if not undo._exit_callbacks:
            setup()
        if model is None:  # @torch.compile(mode=...)
            return lambda m: compile(m, *args, **kwargs)
        return original_compile(model, *args, **kwargs)

    with undo, triton_runtime.patched(torch, "compile", compile):
        yield


@contextlib.contextmanager
def _config(cfg: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(cfg, name)
    setattr(cfg, name, value)
    try:
        yield
    finally:
        setattr(cfg, name, old)


@contextlib.contextmanager
def generators_in_process() -> Iterator[None]:
    """Helion and Inductor compile in this process, off their caches, while the stand-in is up."""
    cache = tempfile.mkdtemp(prefix="irscope-layers-")
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_env(dict(_HELION_ENV, HELION_CACHE_DIR=os.path.join(cache, "helion"))))
            if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
                import torch

                stack.enter_context(_inductor_standin(torch))
            yield
    finally:
        shutil.rmtree(cache, ignore_errors=True)
