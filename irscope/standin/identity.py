"""The stand-in GPU looks like the chip to libraries: torch.version, nvidia-smi / rocm-smi on PATH.

Libraries find the GPU in ways torch.cuda's stand-in (driver.FakeDeviceInterface) does not cover:
    torch.version.cuda / .hip   which toolkit torch was built for (CUDA 12.8 / ROCm 6.4 here)
    nvidia-smi, rocm-smi        run in a subprocess at import (name, memory, driver version):
                                a stand-in executable in a temporary folder put first on PATH
                                answers as the chip (hardware.py); the common query forms:
                                `nvidia-smi`, `-L`, `--query-gpu=name,memory.total,... --format=csv[,noheader][,nounits]`,
                                `rocm-smi --showproductname / --showmeminfo vram / --json`
Everything is put back on exit (PATH included).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.kernel.targets import Target

CUDA_VERSION = "12.8"
CUDA_DRIVER = "570.124.06"
HIP_VERSION = "6.4.43482"
ROCM_DRIVER = "6.12.12"


def chip_facts(target: Target) -> dict[str, Any]:
    """What the stand-in smi tools say: from the chip table."""
    hw = target.hardware
    return {
        "backend": target.backend,
        "name": hw.name,
        "memory_mib": hw.memory_gib * 1024,
        "arch": str(target.arch),
        "sms": hw.sms,
        "sm_clock_mhz": hw.sm_clock_mhz,
        "mem_clock_mhz": hw.mem_clock_mhz,
        "capability": "{}.{}".format(*hw.capability),
        "driver": CUDA_DRIVER if target.backend == "cuda" else ROCM_DRIVER,
        "cuda": CUDA_VERSION,
    }


SMI = Path(__file__).with_name("smi.py")


@contextlib.contextmanager
def smi_on_path(target: Target) -> Iterator[Path]:
    """nvidia-smi (CUDA targets) or rocm-smi and amd-smi (ROCm) on PATH, answering as the chip."""
    folder = Path(tempfile.mkdtemp(prefix="irscope-smi-"))
    facts = json.dumps(chip_facts(target))
    names = ["nvidia-smi"] if target.backend == "cuda" else ["rocm-smi", "amd-smi"]
    for name in names:
        exe = folder / name
        exe.write_text(f"#!/bin/sh\nIRSCOPE_SMI_FACTS='{facts}' exec '{sys.executable}' '{SMI}' {name} \"$@\"\n")
        exe.chmod(0o755)
    old = os.environ.get("PATH")
    os.environ["PATH"] = str(folder) + os.pathsep + (old or "")
    try:
        yield folder
    finally:
        if old is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = old
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def torch_version(torch: Any, target: Target) -> Iterator[None]:
    """torch.version.cuda / .hip as a GPU build of torch for the target's vendor says them."""
    cuda, hip = (CUDA_VERSION, None) if target.backend == "cuda" else (None, HIP_VERSION)
    with triton_runtime.patched(torch.version, "cuda", cuda), triton_runtime.patched(torch.version, "hip", hip):
        yield
