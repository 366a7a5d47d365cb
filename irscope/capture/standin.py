"""A stand-in GPU, so that a script written for one runs on a machine without it.

Used by capture (irscope dump SCRIPT) when there is no GPU here, or when --target
is not the local GPU. While `machine(target)` is entered:

- Triton's active driver is a CaptureDriver: get_current_target() is the requested
  target, so every kernel is bound (specialized) and compiled for it;
  get_active_torch_device() is the CPU; launches go to a launcher that does nothing
  (capture records them before that); the benchmarker and device interface that
  triton.testing and @triton.autotune use answer at once with a placeholder time.
- torch: tensors created for "cuda" (device="cuda", .cuda(), .to("cuda"), device=0)
  are made on the CPU instead, by a TorchFunctionMode, and say they are on cuda:0
  (.device, .is_cuda), as does get_active_torch_device(): code that branches on
  `x.device.type == "cuda"` (libraries sizing a grid by the SM count do) takes its GPU
  path. So are tensors made with no device= under torch.set_default_device("cuda") or
  `with torch.device("cuda")`, and all of this holds in threads the script starts.
  torch.cuda answers as a GPU of the target would (is_available, device count,
  capability and properties, synchronize, events, streams, device contexts). CPU
  allocations are 64-byte aligned, so a pointer is 16-byte aligned exactly when it
  would be on the GPU (where allocations are 256-byte aligned): views at an odd offset
  are unaligned on both.

Everything is put back on exit. Nothing here computes a result: kernels do not run.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from types import SimpleNamespace
from typing import Any, Iterator

from irscope.core import adapter
from irscope.core.targets import Target, local_gpu_target

PLACEHOLDER_MS = 100.0  # what a fake event says elapsed: large, so timing loops run each call once


def capability(target: Target) -> tuple[int, int]:
    """What torch.cuda.get_device_capability() reports on the target's chip (ROCm: the gfx major/minor)."""
    return target.hardware.capability


def device_properties(target: Target) -> dict[str, Any]:
    """What Triton's driver.utils.get_device_properties returns on the target's chip."""
    hw = target.hardware
    props = {
        "max_shared_mem": hw.max_shared_per_block,
        "max_num_regs": hw.regs_per_sm if target.backend == "cuda" else hw.regs_per_sm * 64 * hw.simds_per_cu,
        "multiprocessor_count": hw.sms,
        "warpSize": target.warp_size,
        "sm_clock_rate": hw.sm_clock_mhz * 1000,
        "mem_clock_rate": hw.mem_clock_mhz * 1000,
        "mem_bus_width": hw.mem_bus_bits,
    }
    if target.backend == "hip":
        props["arch"] = str(target.arch)
        props["max_threads_per_sm"] = 2048
    return props


# ---------------------------------------------------------------- timing stand-ins


class FakeEvent:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait(self, *args, **kwargs):
        pass

    def query(self):
        return True

    def elapsed_time(self, other) -> float:
        return PLACEHOLDER_MS


class FakeStream:
    cuda_stream = 0

    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, *args):
        pass

    def wait_event(self, *args):
        pass

    def record_event(self, event=None):
        return event or FakeEvent()

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def placeholder_benchmark(kernel_call, quantiles=None, **kwargs):
    """The autotuner's benchmarker: one call (so the config is bound and recorded), no timing."""
    kernel_call()
    if quantiles:
        return [PLACEHOLDER_MS] * len(quantiles)
    return PLACEHOLDER_MS


class FakeDeviceInterface:
    """What driver.get_device_interface() returns (torch.cuda on a real GPU): enough for
    triton.testing.do_bench and scripts' own timing code."""

    Event = FakeEvent
    Stream = FakeStream

    def __init__(self, target: Target):
        self.target = target

    def ExternalStream(self, *args, **kwargs):
        return FakeStream()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, *args) -> None:
        pass

    def synchronize(self, *args, **kwargs) -> None:
        pass

    def current_stream(self, *args, **kwargs):
        return FakeStream()

    def default_stream(self, *args, **kwargs):
        return FakeStream()

    def stream(self, *args, **kwargs):
        return contextlib.nullcontext()

    def get_device_capability(self, *args) -> tuple[int, int]:
        return capability(self.target)

    def get_device_name(self, *args) -> str:
        return self.target.hardware.name

    class device:  # torch.cuda.device(...) / device_of(...): a context that selects nothing
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    device_of = device

    def get_device_properties(self, *args):
        hw = self.target.hardware
        major, minor = capability(self.target)
        return SimpleNamespace(name=hw.name, major=major, minor=minor,
                               multi_processor_count=hw.sms,
                               total_memory=hw.memory_gib * 2**30, warp_size=self.target.warp_size,
                               max_threads_per_multi_processor=2048, regs_per_multiprocessor=hw.regs_per_sm,
                               shared_memory_per_block_optin=hw.max_shared_per_block,
                               gcnArchName=str(self.target.arch) if self.target.backend == "hip" else "")

    def empty_cache(self) -> None:
        pass

    def is_bf16_supported(self, *args, **kwargs) -> bool:
        return True

    def memory_allocated(self, *args) -> int:
        return 0

    max_memory_allocated = memory_allocated
    memory_reserved = memory_allocated
    max_memory_reserved = memory_allocated

    def reset_peak_memory_stats(self, *args) -> None:
        pass

    def mem_get_info(self, *args) -> tuple[int, int]:
        return 80 * 2**30, 80 * 2**30


# ---------------------------------------------------------------- the driver


def _cpp_type(ty: str) -> str:
    if ty.startswith("*"):
        return "void*"
    return {"i1": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t", "u1": "bool",
            "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t", "fp16": "double",
            "bf16": "double", "fp32": "double", "fp64": "double"}.get(ty, "void*")


class _Launcher:
    """driver.launcher_cls: a launch that does nothing (capture has recorded it already)."""

    def __init__(self, src=None, metadata=None):
        self.metadata = metadata

    def __call__(self, *args, **kwargs):
        return None


class _Utils:
    def __init__(self, target: Target):
        self.target = target

    def get_device_properties(self, device=None) -> dict[str, Any]:
        return device_properties(self.target)

    def load_binary(self, name, kernel, shared, device):
        """(module, function, n_regs, n_spills, n_max_threads), as Triton's loader returns them.

        The register count is read from the binary (cuobjdump's resource report, or the
        AMDGPU metadata), so code that sizes a launch from kernel.n_regs (the fused
        softmax tutorial does) sees the value the GPU would report.
        """
        regs, spills = binary_registers(self.target, name, kernel)
        return 1, 0, regs, spills, 1024

    def unload_module(self, module) -> None:
        pass

    def set_printf_fifo_size(self, size) -> None:
        pass


def _msgpack_uint(blob: bytes, key: bytes) -> int | None:
    """The unsigned integer after `key` in the hsaco's msgpack metadata (fixint, uint8/16/32)."""
    m = re.search(re.escape(key) + rb"(?:\xcc(.)|\xcd(..)|\xce(....)|([\x00-\x7f]))", blob, re.S)
    if m is None:
        return None
    raw = next(g for g in m.groups() if g is not None)
    return int.from_bytes(raw, "big")


def binary_registers(target: Target, name: str, binary: bytes) -> tuple[int, int]:
    """Registers per thread and spill bytes of a compiled kernel; (32, 0) when unreadable."""
    try:
        if target.backend == "cuda":
            with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
                f.write(binary)
                path = f.name
            try:
                out = subprocess.run([adapter.cuobjdump_path(), "-res-usage", path], capture_output=True,
                                     text=True, timeout=60).stdout
            finally:
                os.unlink(path)
            m = re.search(r"REG:(\d+)", out)
            local = re.search(r"LOCAL:(\d+)", out)
            if m:
                return int(m.group(1)), int(local.group(1)) if local else 0
        else:
            regs = _msgpack_uint(binary, b".vgpr_count")
            if regs is not None:
                return regs, _msgpack_uint(binary, b".vgpr_spill_count") or 0
    except (OSError, subprocess.SubprocessError):
        pass
    return 32, 0


def make_driver(target: Target, device_id: int):
    """A Triton driver for `target` that runs nothing (a DriverBase subclass, made on first use)."""
    base = adapter.driver_base_type()

    class CaptureDriver(base):
        @classmethod
        def is_active(cls):
            return False  # never picked by Triton's own driver discovery

        def __init__(self):
            self.target = target
            self.utils = _Utils(target)
            self.launcher_cls = _Launcher
            self.device_interface = FakeDeviceInterface(target)

        def map_python_to_cpp_type(self, ty: str) -> str:
            return _cpp_type(ty)

        def get_current_target(self):
            return target.to_triton()

        def get_current_device(self):
            return device_id

        def set_current_device(self, device):
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_device_capability(self, device=None):
            return capability(target)

        def get_active_torch_device(self):
            import torch

            return torch.device("cuda", 0)  # tensors made for it live on the CPU (_cpu_mode)

        def get_device_interface(self):
            return self.device_interface

        def get_benchmarker(self):
            return placeholder_benchmark

        def get_empty_cache_for_benchmark(self):
            import torch

            return torch.empty(16, dtype=torch.int32)

        def clear_cache(self, cache):
            pass

        def allocate_default_profile_scratch(self, size, alignment, stream):
            import torch

            return torch.zeros(size, dtype=torch.int8)

        def __repr__(self):
            return f"irscope CaptureDriver({target.name}, launches recorded, not run)"

    return CaptureDriver()


# ---------------------------------------------------------------- torch on the CPU


def _is_gpu_device(d: Any) -> bool:
    if isinstance(d, str):
        return d.startswith(("cuda", "hip"))
    if isinstance(d, int) and not isinstance(d, bool):
        return True  # device=0 means cuda:0 to torch
    return type(d).__name__ == "device" and getattr(d, "type", "") == "cuda"


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
    import torch
    from torch.overrides import TorchFunctionMode

    identity = {torch.Tensor.cuda, torch.Tensor.pin_memory}
    moves = {torch.Tensor.to, torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
             torch.Tensor.new_full, torch.Tensor.new_tensor}
    is_cuda = torch.Tensor.is_cuda.__get__
    device_of = torch.Tensor.device.__get__
    get_device = torch.Tensor.get_device
    cuda0 = torch.device("cuda", 0)
    constructors, default_device = _default_device_probe()

    class CpuForCuda(TorchFunctionMode):
        """device="cuda" -> the CPU; .cuda() and pin_memory() -> the tensor itself;
        .device -> cuda:0, .is_cuda -> True, .get_device() -> 0. A constructor given no
        device while the default device is a GPU one (torch.set_default_device("cuda"),
        `with torch.device("cuda")`) is given the CPU too."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in identity:
                return args[0]
            if func == is_cuda:
                return True
            if func == device_of:
                return cuda0
            if func == get_device:
                return 0
            if "device" in kwargs and _is_gpu_device(kwargs["device"]):
                kwargs = dict(kwargs, device="cpu")
            elif kwargs.get("device") is None and func in constructors and _is_gpu_device(default_device()):
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

        if any(m is mode for m in _get_current_function_mode_stack()):
            return original(self, *args)
        with mode:
            return original(self, *args)

    with adapter.patched(cls, "apply", apply):
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
def _in_new_threads(mode) -> Iterator[None]:
    """Threads started while the stand-in is up run on it too.

    torch's mode stack is per thread and a new thread starts with an empty one: its
    device="cuda" would reach the real (absent) CUDA, and tensors handed to it would say
    they are on the CPU. Thread._bootstrap_inner runs first thing in the new thread for
    every Thread, subclasses and ThreadPoolExecutor workers included (private, present in
    3.8-3.14; without it threads are left as they are).
    """
    import threading

    original = getattr(threading.Thread, "_bootstrap_inner", None)
    if original is None:
        yield
        return

    def bootstrap_inner(self) -> None:
        with mode:
            original(self)

    with adapter.patched(threading.Thread, "_bootstrap_inner", bootstrap_inner):
        yield


@contextlib.contextmanager
def _torch_on_cpu(target: Target) -> Iterator[None]:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        yield
        return
    import warnings

    with warnings.catch_warnings():  # irscope's import, not the script's: keep torch's own noise
        warnings.simplefilter("ignore")  # (e.g. "Failed to initialize NumPy") off the script's output
        import torch

    iface = FakeDeviceInterface(target)
    names = ["is_available", "device_count", "current_device", "set_device", "synchronize", "current_stream",
             "default_stream", "stream", "get_device_capability", "get_device_name", "get_device_properties",
             "empty_cache", "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
             "max_memory_reserved", "reset_peak_memory_stats", "mem_get_info", "Event", "Stream", "ExternalStream",
             "device", "device_of"]
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(adapter.patched(torch.cuda, name, getattr(iface, name)))
        mode = _cpu_mode()
        stack.enter_context(_default_device_kept(torch))
        stack.enter_context(_backward_in(mode))
        stack.enter_context(_in_new_threads(mode))
        stack.enter_context(mode)
        yield


_sessions = iter(range(1_000_000, 2_000_000))


@contextlib.contextmanager
def machine(target: Target) -> Iterator[Any]:
    """Run a script as if a GPU of `target` were here; yields the driver."""
    # A device id of its own per session: JITFunctions cache their binder (which holds
    # the backend, hence the target) per device id, so a later session for another
    # target in this process does not reuse this one's.
    drv = make_driver(target, next(_sessions))
    with adapter.active_driver(drv), _torch_on_cpu(target):
        yield drv


@contextlib.contextmanager
def machine_unless_local(target: Target) -> Iterator[None]:
    """The stand-in GPU of `target`, unless this machine has that GPU.

    Loading the kernel file of a capture for a replay: a captured script (or the library
    module a kernel came from) often asks Triton's driver for the device or the target at
    import time (`DEVICE = driver.active.get_active_torch_device()`, autotune configs picked
    per backend). Without the GPU the capture was made for, that import runs on the
    stand-in GPU of `target`, as the capture did.
    """
    if local_gpu_target() == target:
        yield
        return
    with machine(target):
        yield
