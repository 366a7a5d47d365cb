"""The stand-in GPU: a script written for a GPU runs on a machine without it, as if it had one.

Used by capture (irscope dump SCRIPT) when there is no GPU here, or when --target is not the
local GPU, and when a capture's kernel file is loaded again for a replay. `machine(target)`
puts up its two halves together and takes them down together:

    driver.py       Triton's active driver is one for `target` that binds and compiles for it
                    and runs nothing (launches are recorded, not run; timings are placeholders)
    tensors.py      tensors made for "cuda" live on the CPU and say they are on cuda:0;
                    torch.cuda answers as a GPU of the target would

Nothing here computes a result: kernels do not run.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from irscope.core.adapter import runtime as triton_runtime
from irscope.core.targets import Target, local_gpu_target
from irscope.standin.driver import make_driver
from irscope.standin.tensors import torch_on_cpu

_sessions = iter(range(1_000_000, 2_000_000))


@contextlib.contextmanager
def machine(target: Target) -> Iterator[Any]:
    """Run a script as if a GPU of `target` were here; yields the driver."""
    # A device id of its own per session: JITFunctions cache their binder (which holds
    # the backend, hence the target) per device id, so a later session for another
    # target in this process does not reuse this one's.
    drv = make_driver(target, next(_sessions))
    with triton_runtime.active_driver(drv), torch_on_cpu(target):
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
