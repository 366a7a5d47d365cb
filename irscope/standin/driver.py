"""The stand-in GPU's Triton side: a driver that binds and compiles for a target and runs nothing.

While the stand-in is up (standin.machine), Triton's active driver is a CaptureDriver:
get_current_target() is the requested target, so every kernel is bound (specialized) and
compiled for it; get_active_torch_device() is cuda:0 (tensors made for it live on the CPU,
tensors.py); launches go to a launcher that does nothing (the Recorder has recorded them
before that, and Triton's interpreter computes them: interpret.py); the benchmarker and the device interface that triton.testing and @triton.autotune
use answer at once with a placeholder time. The chip's facts (name, SMs, memory, clocks,
limits) come from kernel/hardware.py; kernel.n_regs is read from the compiled binary.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from types import SimpleNamespace
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.kernel.targets import Target
from irscope.standin import memory
from irscope.standin.interpret import benchmarking

PLACEHOLDER_MS = 100.0  # what a fake event says elapsed: large, so timing loops run each call once


def capability(target: Target) -> tuple[int, int]:
    """What torch.cuda.get_device_capability() reports on the target's chip (ROCm: the gfx major/minor)."""
    return target.hardware.capability


def device_properties(target: Target) -> dict[str, Any]:
    """What Triton's driver.utils.get_device_properties returns on the target's chip."""
    hw = target.hardware
    props: dict[str, Any] = {
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
    """torch.cuda.Event: records nothing; every interval is PLACEHOLDER_MS."""

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
    """torch.cuda.Stream: nothing to wait for. Says which device it is on as a stream does (Dynamo reads
    torch.accelerator.current_stream().device when it starts tracing)."""

    cuda_stream = 0
    stream_id = 0
    device_index = 0
    device_type = 1  # torch's DeviceType.CUDA

    @property
    def device(self):
        import torch

        return torch.device("cuda", 0)

    def __repr__(self) -> str:
        return "<torch.cuda.Stream device=cuda:0 cuda_stream=0x0>"

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

    def is_capturing(self) -> bool:  # torch.Stream (2.10+): optimizers ask before a step
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def placeholder_benchmark(kernel_call, quantiles=None, **kwargs):
    """The autotuner's benchmarker: one call (so the config is bound and recorded), no timing;
    its launch is recorded, not computed (its result is thrown away)."""
    with benchmarking():
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

    def set_stream(self, *args, **kwargs) -> None:
        pass

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
        hip = self.target.backend == "hip"
        return SimpleNamespace(
            name=hw.name,
            major=major,
            minor=minor,
            multi_processor_count=hw.sms,
            total_memory=hw.memory_gib * 2**30,
            warp_size=self.target.warp_size,
            max_threads_per_multi_processor=2048 if not hip else hw.max_warps_per_sm * hw.simds_per_cu * 64,
            max_threads_per_block=1024,
            regs_per_multiprocessor=hw.regs_per_sm if not hip else hw.regs_per_sm * 64 * hw.simds_per_cu,
            regs_per_block=hw.regs_per_sm if not hip else hw.regs_per_sm * 64 * hw.simds_per_cu,
            shared_memory_per_block=min(hw.max_shared_per_block, 49152),
            shared_memory_per_multiprocessor=hw.shared_per_sm,
            shared_memory_per_block_optin=hw.max_shared_per_block,
            L2_cache_size=hw.l2_mib * 2**20,
            clock_rate=hw.sm_clock_mhz * 1000,
            memory_clock_rate=hw.mem_clock_mhz * 1000,
            memory_bus_width=hw.mem_bus_bits,
            is_integrated=0,
            is_multi_gpu_board=0,
            uuid="1a2b3c4d-0000-4000-8000-000000000000",
            gcnArchName=f"{self.target.arch}:sramecc+:xnack-" if hip else "",
        )

    def empty_cache(self) -> None:
        pass

    def is_bf16_supported(self, *args, **kwargs) -> bool:
        return True

    # counted from the storages made for cuda (standin/memory.py): a lower bound of the chip's allocator
    def memory_allocated(self, *args, **kwargs) -> int:
        return memory.current().live

    def max_memory_allocated(self, *args, **kwargs) -> int:
        return memory.current().peak

    memory_reserved = memory_allocated  # no cache holds freed blocks on the stand-in
    max_memory_reserved = max_memory_allocated

    def reset_peak_memory_stats(self, *args, **kwargs) -> None:
        memory.current().reset_peak()

    # The stand-in's tensors are CPU tensors filled by the CPU's generator, so "the GPU's" RNG
    # state is the CPU's (Dynamo saves and restores it around every frame it traces).
    def get_rng_state(self, *args, **kwargs):
        import torch

        return torch.get_rng_state()

    def set_rng_state(self, state, *args, **kwargs) -> None:
        import torch

        torch.set_rng_state(state)

    def get_rng_state_all(self):
        return [self.get_rng_state()]

    def set_rng_state_all(self, states) -> None:
        for state in list(states)[:1]:
            self.set_rng_state(state)

    def mem_get_info(self, *args) -> tuple[int, int]:
        total = self.target.hardware.memory_gib * 2**30
        return total, total


# ---------------------------------------------------------------- the driver


def _cpp_type(ty: str) -> str:
    if ty.startswith("*"):
        return "void*"
    return {
        "i1": "bool",
        "i8": "int8_t",
        "i16": "int16_t",
        "i32": "int32_t",
        "i64": "int64_t",
        "u1": "bool",
        "u8": "uint8_t",
        "u16": "uint16_t",
        "u32": "uint32_t",
        "u64": "uint64_t",
        "fp16": "double",
        "bf16": "double",
        "fp32": "double",
        "fp64": "double",
    }.get(ty, "void*")


class _Launcher:
    """driver.launcher_cls: a launch that does nothing (capture has recorded it already)."""

    def __init__(self, src=None, metadata=None):
        self.metadata = metadata

    def __call__(self, *args, **kwargs):
        return None


class _Utils:
    """driver.utils: the chip's properties, and the register count of a compiled binary."""

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
    m = re.search(re.escape(key) + rb"(?:\xcc(.)|\xcd(..)|\xce(....)|([\x00-\x7f]))", blob, re.DOTALL)
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
                out = subprocess.run(
                    [adapter.cuobjdump_path(), "-res-usage", path],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=False,
                ).stdout
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


def make_driver(target: Target, device_id: int):  # noqa: C901
    """A Triton driver for `target` that runs nothing (a DriverBase subclass, made on first use)."""
    base = triton_runtime.driver_base_type()

    class CaptureDriver(base):  # type: ignore[valid-type, misc]  # Triton's driver class, found at run time
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

            return torch.device("cuda", 0)  # tensors made for it live on the CPU (tensors.py)

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
