"""The stand-in GPU's torch side: tensors made for "cuda" live on the CPU and say they are on cuda:0.

While `torch_on_cpu(target)` is entered, a TorchFunctionMode (CpuForCuda) makes tensors created
for "cuda" (device="cuda", .cuda(), .to("cuda"), device=0) on the CPU instead, and they say they
are on cuda:0 (.device, .is_cuda): code that branches on `x.device.type == "cuda"` (libraries
sizing a grid by the SM count do) takes its GPU path. So are tensors made with no device= under
torch.set_default_device("cuda") or `with torch.device("cuda")`, and all of this holds in
threads the script starts and in autograd backward passes. torch.cuda answers as a GPU of the
target would (the stand-in device interface: is_available, device count, capability and
properties, synchronize, events, streams, device contexts).

CPU allocations are 64-byte aligned, so a pointer is 16-byte aligned exactly when it would be on
the GPU (where allocations are 256-byte aligned): views at an odd offset are unaligned on both.
Everything is put back on exit, the default device included.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.kernel.targets import Target
from irscope.standin.bench import benchmarks_once
from irscope.standin.dispatch import cuda_registrations_on_cpu
from irscope.standin.driver import FakeDeviceInterface
from irscope.standin.identity import torch_version
from irscope.standin.layers import _is_gpu_device, _modes_off
from irscope.standin.shapes import ShapeOnly, shape_only_mode


def _default_device_probe() -> tuple[Any, Any]:
    """(the constructors torch's default device applies to, a function that returns that
    device for this thread, None when unset).

    torch.set_default_device / `with torch.device(...)` push a DeviceContext mode to the
    bottom of the thread's mode stack, under the stand-in's: it fills in device= after
    CpuForCuda has looked, so CpuForCuda must fill in the CPU first. Read from the mode
    stack, as torch.get_default_device() does (private since torch 2.0: empty if gone).
    """
    try:
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._device import DeviceContext, _device_constructors
    except ImportError:
        return frozenset(), lambda: None

    def default_device() -> Any:
        for mode in _get_current_function_mode_stack():
            if isinstance(mode, DeviceContext):
                return mode.device
        return None

    return _device_constructors(), default_device


def _cpu_mode():
    """The TorchFunctionMode that puts "cuda" tensors on the CPU (one per session)."""
    import torch
    from torch.overrides import TorchFunctionMode

    identity = {torch.Tensor.cuda, torch.Tensor.pin_memory}
    moves = {torch.Tensor.to, torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
             torch.Tensor.new_full, torch.Tensor.new_tensor}
    is_cuda = torch.Tensor.is_cuda.__get__
    device_of = torch.Tensor.device.__get__
    get_device = torch.Tensor.get_device
    tensor_repr, tensor_format = torch.Tensor.__repr__, torch.Tensor.__format__
    cuda0 = torch.device("cuda", 0)
    constructors, default_device = _default_device_probe()

    class CpuForCuda(TorchFunctionMode):
        """device="cuda" -> the CPU; .cuda() and pin_memory() -> the tensor itself;
        .device -> cuda:0, .is_cuda -> True, .get_device() -> 0, repr() with device='cuda:0'. A constructor given no
        device while the default device is a GPU one (torch.set_default_device("cuda"),
        `with torch.device("cuda")`) is given the CPU too."""

        _irscope_standin = True  # kept out of torch.compile'd code (layers.py)

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in identity:
                return args[0]
            if func in (is_cuda, device_of, get_device):
                real = device_of(args[0])  # the mode is off inside its own handler: the tensor's own device
                if real.type != "cpu":     # meta tensors (FakeTensor's inner ones) keep theirs
                    return func(*args, **kwargs)
                return True if func == is_cuda else cuda0 if func == device_of else 0
            if func is tensor_format and len(args) == 2 and args[1] == "" and args[0].dim() != 0:
                func, args, kwargs = tensor_repr, args[:1], {}   # f"{x}": object.__format__ -> str(x)
            if func is tensor_repr and device_of(args[0]).type == "cpu":
                # print(x) reads as a GPU tensor's: torch's own formatting, with this mode back on
                # so it sees .device as cuda:0 and adds device='cuda:0' where a GPU run has it
                with self:
                    return torch._tensor_str._str(args[0], tensor_contents=kwargs.get("tensor_contents"))
            if "device" in kwargs and _is_gpu_device(kwargs["device"]) or kwargs.get("device") is None and func in constructors and _is_gpu_device(default_device()):
                kwargs = dict(kwargs, device="cpu")
            if kwargs.get("pin_memory"):
                kwargs = dict(kwargs, pin_memory=False)
            if func in moves:
                args = tuple("cpu" if i > 0 and _is_gpu_device(a) and not isinstance(a, int) else a
                             for i, a in enumerate(args))
            return func(*args, **kwargs)

    return CpuForCuda()


@contextlib.contextmanager
def _backward_in(mode) -> Iterator[None]:
    """Run autograd.Function.backward methods under `mode` too.

    The autograd engine runs a backward pass with the torch-function modes of the
    .backward() call, and that call reaches the engine from inside the mode's own
    handler, where the mode is popped: a custom Function's backward (where libraries
    allocate and launch kernels) would see real CPU devices. PyNode calls the
    backward object's `apply` attribute, so wrapping it there puts the mode back.
    """
    import torch

    cls = getattr(torch.autograd.function, "BackwardCFunction", None)
    if cls is None or not hasattr(cls, "apply"):
        yield
        return
    original = cls.apply

    def apply(self, *args):
        from torch.overrides import _get_current_function_mode_stack

        if getattr(getattr(self, "_forward_cls", None), "__module__", "").startswith("torch._functorch"):
            return _modes_off(original)(self, *args)  # a torch.compile'd backward: as its forward (layers.py)
        if any(m is mode for m in _get_current_function_mode_stack()):
            return original(self, *args)
        with mode:
            return original(self, *args)

    with triton_runtime.patched(cls, "apply", apply):
        yield


@contextlib.contextmanager
def _default_device_kept(torch: Any) -> Iterator[None]:
    """Put torch's default device back as it was: a script's set_default_device("cuda")
    would otherwise outlive the session and send irscope's own tensors to the real CUDA."""
    holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    before = getattr(holder, "device_context", None)
    try:
        yield
    finally:
        if holder is not None and getattr(holder, "device_context", None) is not before:
            with contextlib.suppress(Exception):
                torch.set_default_device(before.device if before is not None else None)


@contextlib.contextmanager
def _in_new_threads(mode, dispatch_mode=None) -> Iterator[None]:
    """Threads started while the stand-in is up run on it too.

    torch's mode stack is per thread and a new thread starts with an empty one: its
    device="cuda" would reach the real (absent) CUDA, and tensors handed to it would say
    they are on the CPU. Thread._bootstrap_inner runs first thing in the new thread for
    every Thread, subclasses and ThreadPoolExecutor workers included (private, present in
    3.8-3.14; without it threads are left as they are).
    """
    original = getattr(threading.Thread, "_bootstrap_inner", None)
    if original is None:
        yield
        return

    def bootstrap_inner(self) -> None:
        with mode, (dispatch_mode if dispatch_mode is not None else contextlib.nullcontext()):
            original(self)

    with triton_runtime.patched(threading.Thread, "_bootstrap_inner", bootstrap_inner):
        yield


@contextlib.contextmanager
def torch_on_cpu(target: Target, shape_only: ShapeOnly | None = None) -> Iterator[None]:
    """torch as on a GPU of `target`, with tensors on the CPU (nothing to do without torch);
    with `shape_only`, ops too big for the CPU run shape-only (shapes.py) and are counted there."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    with warnings.catch_warnings():  # irscope's import, not the script's: keep torch's own noise
        warnings.simplefilter("ignore")  # (e.g. "Failed to initialize NumPy") off the script's output
        import torch

    iface = FakeDeviceInterface(target)
    names = ["is_available", "device_count", "current_device", "set_device", "synchronize", "current_stream",
             "default_stream", "stream", "set_stream", "get_device_capability", "get_device_name", "get_device_properties",
             "empty_cache", "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
             "max_memory_reserved", "reset_peak_memory_stats", "mem_get_info", "Event", "Stream", "ExternalStream",
             "device", "device_of", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all"]
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(triton_runtime.patched(torch.cuda, name, getattr(iface, name)))
        stack.enter_context(torch_version(torch, target))
        stack.enter_context(benchmarks_once(torch))
        stack.enter_context(cuda_registrations_on_cpu(torch))
        mode = _cpu_mode()
        big = shape_only_mode(shape_only) if shape_only is not None and shape_only.budget_s > 0 else None
        stack.enter_context(_default_device_kept(torch))
        stack.enter_context(_backward_in(mode))
        stack.enter_context(_in_new_threads(mode, big))
        stack.enter_context(mode)
        if big is not None:
            stack.enter_context(big)
        yield

