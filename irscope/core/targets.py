"""Compile targets: parsing, friendly names, and the hardware facts irscope needs.

A target is what Triton's `GPUTarget` describes (backend, arch, warp size). The
hardware table holds the per-chip limits used for the occupancy estimate and the
shared-memory check that a real launch would make (Triton only checks shared
memory when it loads a binary onto a GPU, so a CPU compile never sees it).
"""

from __future__ import annotations

from dataclasses import dataclass

from irscope.errors import BadInput, did_you_mean


@dataclass(frozen=True)
class Hardware:
    """Per-chip limits. Figures from the vendors' tuning guides / ISA documents."""

    chip: str
    regs_per_sm: int            # 32-bit registers per SM (NVIDIA) / VGPRs per SIMD lane (AMD)
    max_warps_per_sm: int       # NVIDIA: warps per SM; AMD: waves per SIMD
    max_blocks_per_sm: int
    shared_per_sm: int          # bytes of shared memory / LDS per SM or CU
    max_shared_per_block: int   # the most one block may ask for (opt-in maximum on NVIDIA)
    reserved_shared_per_block: int = 0  # the driver's own reservation per block (NVIDIA sm80+: 1 KiB)
    reg_alloc_unit: int = 256   # NVIDIA: registers allocated per warp in units of this
    simds_per_cu: int = 4       # AMD only


@dataclass(frozen=True)
class Target:
    backend: str      # "cuda" or "hip"
    arch: int | str   # 90 for cuda (an int: Triton compares it), "gfx942" for hip
    warp_size: int

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.arch}"

    @property
    def slug(self) -> str:
        """File-system friendly name, e.g. cuda90 / gfx942."""
        return f"cuda{self.arch}" if self.backend == "cuda" else str(self.arch)

    @property
    def hardware(self) -> Hardware:
        return HARDWARE[self.name]

    @property
    def is_nvidia(self) -> bool:
        return self.backend == "cuda"

    def to_triton(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget(self.backend, self.arch, self.warp_size)


HARDWARE: dict[str, Hardware] = {
    # Ampere A100: 64K regs/SM, 64 warps, 164 KiB smem/SM, 163 KiB per block opt-in.
    "cuda:80": Hardware("A100 (sm_80)", 65536, 64, 32, 167936, 166912, 1024),
    # Hopper H100/H200: 228 KiB smem/SM, 227 KiB per block.
    "cuda:90": Hardware("H100/H200 (sm_90)", 65536, 64, 32, 233472, 232448, 1024),
    # Blackwell B200: same SM budget as Hopper (plus tensor memory, not modelled here).
    "cuda:100": Hardware("B200 (sm_100)", 65536, 64, 32, 233472, 232448, 1024),
    # Consumer Blackwell RTX 5090: 48 warps/SM, 100 KiB smem/SM, 99 KiB per block.
    "cuda:120": Hardware("RTX 5090 (sm_120)", 65536, 48, 32, 102400, 101376, 1024),
    # CDNA2 MI250X: 512 VGPRs per lane (arch+acc unified), 8 waves/SIMD, 64 KiB LDS per CU.
    "hip:gfx90a": Hardware("MI250X (gfx90a)", 512, 8, 32, 65536, 65536),
    # CDNA3 MI300X: as gfx90a for these limits.
    "hip:gfx942": Hardware("MI300X (gfx942)", 512, 8, 32, 65536, 65536),
    # CDNA4 MI355X: LDS grows to 160 KiB per CU.
    "hip:gfx950": Hardware("MI355X (gfx950)", 512, 8, 32, 163840, 163840),
}

ALIASES: dict[str, str] = {
    "a100": "cuda:80",
    "h100": "cuda:90",
    "h200": "cuda:90",
    "b200": "cuda:100",
    "rtx5090": "cuda:120",
    "mi250x": "hip:gfx90a",
    "mi300x": "hip:gfx942",
    "mi355x": "hip:gfx950",
}

VALID_TARGETS = sorted(HARDWARE) + sorted(ALIASES)


def parse_target(text: str) -> Target:
    """'h100', 'cuda:90', 'sm_90', 'gfx942', 'hip:gfx942' -> Target."""
    raw = text.strip().lower()
    key = ALIASES.get(raw, raw)
    if key.startswith(("sm_", "sm")) and key.lstrip("sm_").isdigit():
        key = "cuda:" + key.lstrip("sm_")
    elif key.startswith("gfx"):
        key = "hip:" + key
    if key not in HARDWARE:
        raise BadInput(
            f"unknown target {text!r}{did_you_mean(raw, VALID_TARGETS)}; "
            f"valid: {', '.join(VALID_TARGETS)}"
        )
    backend, arch = key.split(":")
    if backend == "cuda":
        return Target("cuda", int(arch), 32)
    return Target("hip", arch, 64)


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
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return cuda if cuda.cuInit(0) == 0 else None


def _libcuda_devices() -> int:
    import ctypes

    cuda, count = _libcuda(), ctypes.c_int()
    return count.value if cuda is not None and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0


def _kfd_gfx_versions():
    """gfx_target_version of each GPU node in the KFD topology (CPU nodes say 0), in node order."""
    import glob

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
    import ctypes

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
    return Target("cuda", arch, 32) if f"cuda:{arch}" in HARDWARE else None


def _local_amd() -> Target | None:
    for version in _kfd_gfx_versions():
        major, minor, step = version // 10000, (version // 100) % 100, version % 100
        name = f"gfx{major}{minor}{step:x}"
        if f"hip:{name}" in HARDWARE:
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
