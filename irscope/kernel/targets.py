"""Compile targets: parsing, friendly names, and the local GPU's target.

A target is what Triton's `GPUTarget` describes (backend, arch, warp size). Its chip's
limits (hardware.py) give the occupancy estimate and the shared-memory check that a real
launch would make (Triton only checks shared memory when it loads a binary onto a GPU, so a
CPU compile never sees it).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field

from irscope.errors import BadInput, did_you_mean
from irscope.kernel.hardware import CHIPS, TARGET_CHIP, Chip, for_target


@dataclass(frozen=True)
class Target:
    backend: str  # "cuda" or "hip"
    arch: int | str  # 90 for cuda (an int: Triton compares it), "gfx942" for hip
    warp_size: int
    # the chip named (--target h200, a recipe's target, the local GPU's name), else None: the target's
    # default chip. Not part of equality: h100 and h200 are one compile target (cuda:90), two chips.
    chip: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.arch}"

    @property
    def slug(self) -> str:
        """File-system friendly name, e.g. cuda90 / gfx942."""
        return f"cuda{self.arch}" if self.backend == "cuda" else str(self.arch)

    @property
    def hardware(self) -> Chip:
        """The chip this target stands for: its limits (hardware.py, the one table of chip facts)."""
        return CHIPS[self.chip] if self.chip in CHIPS else for_target(self.name)

    @property
    def is_nvidia(self) -> bool:
        return self.backend == "cuda"

    def to_triton(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget(self.backend, self.arch, self.warp_size)


# --target names: each chip's key ('h200' -> cuda:90), beside the targets themselves
ALIASES: dict[str, str] = {key: chip.target for key, chip in CHIPS.items()}

VALID_TARGETS = sorted(TARGET_CHIP) + sorted(ALIASES)


def parse_target(text: str) -> Target:
    """'h100', 'cuda:90', 'sm_90', 'gfx942', 'hip:gfx942' -> Target."""
    raw = text.strip().lower()
    key = ALIASES.get(raw, raw)
    if key.startswith(("sm_", "sm")) and key.lstrip("sm_").isdigit():
        key = "cuda:" + key.lstrip("sm_")
    elif key.startswith("gfx"):
        key = "hip:" + key
    if key not in TARGET_CHIP:
        raise BadInput(f"unknown target {text!r}{did_you_mean(raw, VALID_TARGETS)}; valid: {', '.join(VALID_TARGETS)}")
    backend, arch = key.split(":")
    chip = raw if raw in CHIPS else None
    if backend == "cuda":
        return Target("cuda", int(arch), 32, chip)
    return Target("hip", arch, 64, chip)


def local_gpu_target() -> Target | None:
    """The target of the GPU on this machine, or None on a machine without one.

    Asks the driver directly (libcuda through ctypes; the KFD topology in sysfs on
    AMD) instead of Triton's driver object, which would import torch. A CPU-only
    machine pays one failed library load or nothing.
    """
    return _local_nvidia() or _local_amd()


def local_gpu_present() -> bool:
    """Whether any GPU is visible here, known to irscope's tables or not (no torch import)."""
    return _libcuda_devices() > 0 or any(True for _ in _kfd_gfx_versions())


def _libcuda():
    """libcuda, initialised, or None (no driver, or cuInit failed)."""
    import ctypes  # loads a C extension: only to ask the driver

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return cuda if cuda.cuInit(0) == 0 else None


def _libcuda_devices() -> int:
    import ctypes  # loads a C extension: only to ask the driver

    cuda, count = _libcuda(), ctypes.c_int()
    return count.value if cuda is not None and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0


def _kfd_gfx_versions():
    """gfx_target_version of each GPU node in the KFD topology (CPU nodes say 0), in node order."""

    for props in sorted(glob.glob("/sys/class/kfd/kfd/topology/nodes/*/properties")):
        try:
            text = open(props).read()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("gfx_target_version"):
                version = int(line.split()[1])
                if version:
                    yield version
                break


def _local_nvidia() -> Target | None:
    import ctypes  # loads a C extension: only to ask the driver

    cuda = _libcuda()
    dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    if cuda is None or cuda.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return None
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
    if cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) != 0:
        return None
    if cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) != 0:
        return None
    arch = major.value * 10 + minor.value
    return Target("cuda", arch, 32) if f"cuda:{arch}" in TARGET_CHIP else None


def _local_amd() -> Target | None:
    for version in _kfd_gfx_versions():
        major, minor, step = version // 10000, (version // 100) % 100, version % 100
        name = f"gfx{major}{minor}{step:x}"
        if f"hip:{name}" in TARGET_CHIP:
            return Target("hip", name, 64)
    return None


def resolve_target(text: str | None) -> tuple[Target, str]:
    """The target to compile for and a word on why: 'requested', 'local GPU' or 'default'."""
    if text:
        return parse_target(text), "requested"
    local = local_gpu_target()
    if local is not None:
        return local, "local GPU"
    return Target("cuda", 90, 32), "default (no GPU here)"
