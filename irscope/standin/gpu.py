"""The stand-in GPU: a script written for a GPU runs on a machine without it, as if it had one.

Used by capture (irscope capture SCRIPT) when there is no GPU here, or when --target is not the
local GPU, and when a capture's kernel file is loaded again for a replay. `machine(target)`
puts up its parts together and takes them down together:

    driver.py       Triton's active driver is one for `target` that binds and compiles for it
                    and runs nothing (launches are recorded, not run; timings are placeholders)
    tensors.py      tensors made for "cuda" live on the CPU and say they are on cuda:0 (those made
                    for the CPU say cpu: marks.py);
                    torch.cuda answers as a GPU of the target would
    interpret.py    each recorded launch is computed by Triton's interpreter (bounded; capture calls it)
    shapes.py       torch ops too big for the CPU run shape-only
    bench.py        do_bench* run their function once; CUDA graphs capture and replay as plain calls
    identity.py     torch.version, and nvidia-smi / rocm-smi on PATH (smi.py), answer as the chip
    layers.py       Helion and torch.compile (Inductor) compile in this process, off their caches
    aoti.py         AOTInductor (torch.export + aoti_compile_and_package) lowered for the target; its
                    C++ build is not run
    helion_bench.py Helion's autotuner timers run each candidate once and answer a placeholder
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.kernel.targets import Target, local_gpu_target
from irscope.standin.aoti import generators_in_process
from irscope.standin.driver import make_driver
from irscope.standin.helion_bench import helion_timers
from irscope.standin.identity import smi_on_path
from irscope.standin.shapes import ShapeOnly, op_budget_s
from irscope.standin.tensors import torch_on_cpu

_sessions = iter(range(1_000_000, 2_000_000))


@contextlib.contextmanager
def machine(target: Target) -> Iterator[Any]:
    """Run a script as if a GPU of `target` were here; yields the driver (drv.notes(): what the
    stand-in did not compute, one line each)."""
    # A device id of its own per session: JITFunctions cache their binder (which holds
    # the backend, hence the target) per device id, so a later session for another
    # target in this process does not reuse this one's.
    drv = make_driver(target, next(_sessions))
    big = ShapeOnly(op_budget_s())
    with (
        triton_runtime.active_driver(drv),
        torch_on_cpu(target, big),
        smi_on_path(target),
        generators_in_process(),
        helion_timers() as helion,
    ):
        drv.notes = lambda: [n for n in (big.note(),) if n] + helion.notes()
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
