"""The one table of chip facts: limits for occupancy and the launch check, what the stand-in GPU
reports, and the peaks bench's roofline divides by.

Every figure is from the vendor's data sheet, tuning guide or ISA document. A compile target
(cuda:90) stands for one chip by default (TARGET_CHIP); chips of one target share its limits and
differ in memory, clocks and peaks (H100 and H200 are both sm_90).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Chip:
    key: str  # what --target and recipes call it: "h100"
    name: str  # as the driver reports it (torch.cuda.get_device_name, nvidia-smi)
    target: str  # the compile target: "cuda:90", "hip:gfx942"
    family: str  # how summaries name the target's chips: "H100/H200 (sm_90)"
    sms: int  # streaming multiprocessors (NVIDIA) / compute units (AMD)
    warp_size: int
    regs_per_sm: int  # 32-bit registers per SM (NVIDIA) / VGPRs per SIMD lane (AMD)
    max_warps_per_sm: int  # NVIDIA: warps per SM; AMD: waves per SIMD
    max_blocks_per_sm: int
    shared_per_sm: int  # bytes of shared memory / LDS per SM or CU
    max_shared_per_block: int  # the most one block may ask for (opt-in maximum on NVIDIA)
    memory_gib: int
    l2_mib: int
    sm_clock_mhz: int  # boost clock
    mem_clock_mhz: int
    mem_bus_bits: int
    capability: tuple[int, int]  # what torch.cuda.get_device_capability() says (ROCm: the gfx major/minor)
    tflops_16: float  # dense 16-bit tensor-core peak
    tflops_tf32: float
    tflops_fp8: float | None
    hbm_tbps: float
    reserved_shared_per_block: int = 0  # the driver's own reservation per block (NVIDIA sm80+: 1 KiB)
    reg_alloc_unit: int = 256  # NVIDIA: registers allocated per warp in units of this
    simds_per_cu: int = 4  # AMD only
    max_cluster_ctas: int = 1  # NVIDIA: CTAs in one thread-block cluster (Triton's num_ctas); 1: no clusters

    @property
    def is_nvidia(self) -> bool:
        return self.target.startswith("cuda:")


_SM90: dict[str, Any] = dict(
    target="cuda:90",
    family="H100/H200 (sm_90)",
    sms=132,
    warp_size=32,
    regs_per_sm=65536,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    shared_per_sm=233472,
    max_shared_per_block=232448,
    reserved_shared_per_block=1024,
    l2_mib=50,
    sm_clock_mhz=1980,
    capability=(9, 0),
    tflops_16=989.0,
    tflops_tf32=494.0,
    tflops_fp8=1979.0,
    max_cluster_ctas=16,
)  # 8 portable, 16 with the opt-in

CHIPS: dict[str, Chip] = {
    c.key: c
    for c in [
        # Ampere A100 SXM 80 GB: 64K regs/SM, 64 warps, 164 KiB smem/SM, 163 KiB per block opt-in.
        Chip(
            "a100",
            "NVIDIA A100-SXM4-80GB",
            "cuda:80",
            "A100 (sm_80)",
            108,
            32,
            65536,
            64,
            32,
            167936,
            166912,
            memory_gib=80,
            l2_mib=40,
            sm_clock_mhz=1410,
            mem_clock_mhz=1593,
            mem_bus_bits=5120,
            capability=(8, 0),
            tflops_16=312.0,
            tflops_tf32=156.0,
            tflops_fp8=None,
            hbm_tbps=2.04,
            reserved_shared_per_block=1024,
        ),
        # Hopper H100 SXM and H200: 228 KiB smem/SM, 227 KiB per block; the H200 has more, faster HBM.
        Chip(
            "h100",
            "NVIDIA H100 80GB HBM3",
            memory_gib=80,
            mem_clock_mhz=2619,
            mem_bus_bits=5120,
            hbm_tbps=3.35,
            **_SM90,
        ),
        Chip("h200", "NVIDIA H200", memory_gib=141, mem_clock_mhz=3201, mem_bus_bits=6144, hbm_tbps=4.8, **_SM90),
        # Blackwell B200: the same SM budget as Hopper (plus tensor memory, not modelled here).
        Chip(
            "b200",
            "NVIDIA B200",
            "cuda:100",
            "B200 (sm_100)",
            148,
            32,
            65536,
            64,
            32,
            233472,
            232448,
            memory_gib=180,
            l2_mib=126,
            sm_clock_mhz=1965,
            mem_clock_mhz=3996,
            mem_bus_bits=8192,
            capability=(10, 0),
            tflops_16=2250.0,
            tflops_tf32=1100.0,
            tflops_fp8=4500.0,
            hbm_tbps=8.0,
            reserved_shared_per_block=1024,
            max_cluster_ctas=16,
        ),
        # Consumer Blackwell RTX 5090: 48 warps/SM, 100 KiB smem/SM, 99 KiB per block.
        Chip(
            "rtx5090",
            "NVIDIA GeForce RTX 5090",
            "cuda:120",
            "RTX 5090 (sm_120)",
            170,
            32,
            65536,
            48,
            32,
            102400,
            101376,
            memory_gib=32,
            l2_mib=96,
            sm_clock_mhz=2407,
            mem_clock_mhz=14001,
            mem_bus_bits=512,
            capability=(12, 0),
            tflops_16=209.5,
            tflops_tf32=104.8,
            tflops_fp8=419.0,
            hbm_tbps=1.79,
            reserved_shared_per_block=1024,
            max_cluster_ctas=8,
        ),
        # CDNA2 MI250X: 512 VGPRs per lane (arch+acc unified), 8 waves/SIMD, 64 KiB LDS per CU.
        Chip(
            "mi250x",
            "AMD Instinct MI250X",
            "hip:gfx90a",
            "MI250X (gfx90a)",
            110,
            64,
            512,
            8,
            32,
            65536,
            65536,
            memory_gib=64,
            l2_mib=8,
            sm_clock_mhz=1700,
            mem_clock_mhz=1600,
            mem_bus_bits=4096,
            capability=(9, 0),
            tflops_16=191.5,
            tflops_tf32=47.9,
            tflops_fp8=None,
            hbm_tbps=1.6,
        ),
        # CDNA3 MI300X: as gfx90a for these limits.
        Chip(
            "mi300x",
            "AMD Instinct MI300X",
            "hip:gfx942",
            "MI300X (gfx942)",
            304,
            64,
            512,
            8,
            32,
            65536,
            65536,
            memory_gib=192,
            l2_mib=4,
            sm_clock_mhz=2100,
            mem_clock_mhz=1300,
            mem_bus_bits=8192,
            capability=(9, 4),
            tflops_16=1307.0,
            tflops_tf32=653.0,
            tflops_fp8=2615.0,
            hbm_tbps=5.3,
        ),
        # CDNA4 MI355X: LDS grows to 160 KiB per CU.
        Chip(
            "mi355x",
            "AMD Instinct MI355X",
            "hip:gfx950",
            "MI355X (gfx950)",
            256,
            64,
            512,
            8,
            32,
            163840,
            163840,
            memory_gib=288,
            l2_mib=4,
            sm_clock_mhz=2400,
            mem_clock_mhz=1600,
            mem_bus_bits=8192,
            capability=(9, 5),
            tflops_16=2500.0,
            tflops_tf32=1250.0,
            tflops_fp8=5000.0,
            hbm_tbps=8.0,
        ),
    ]
}

# The chip a compile target stands for when no chip is named (its limits are the target's).
TARGET_CHIP: dict[str, str] = {
    "cuda:80": "a100",
    "cuda:90": "h100",
    "cuda:100": "b200",
    "cuda:120": "rtx5090",
    "hip:gfx90a": "mi250x",
    "hip:gfx942": "mi300x",
    "hip:gfx950": "mi355x",
}


def for_target(target_name: str) -> Chip:
    """The chip a compile target stands for ('cuda:90' -> the H100)."""
    return CHIPS[TARGET_CHIP[target_name]]


def by_device_name(name: str) -> Chip | None:
    """The chip a driver's device name describes ('NVIDIA H200' -> h200), None for one not in the table."""
    squashed = name.upper().replace(" ", "").replace("-", "")
    # longest key first: 'RTX5090' before a shorter key that might be inside it
    for chip in sorted(CHIPS.values(), key=lambda c: -len(c.key)):
        if chip.key.upper() in squashed:
            return chip
    return None
