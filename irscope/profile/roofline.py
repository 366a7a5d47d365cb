"""The measured roofline point of one launch: achieved DRAM bandwidth and tensor throughput, each as
a share of the chip's peak from the one chip table (kernel/hardware.py).

From ncu's raw page: dram__bytes_read.sum + dram__bytes_write.sum over gpu__time_duration.sum; tensor
FLOPs are the `sm__ops_path_tensor_src_<dtype>[...].sum` counters (operations the tensor pipe did, by
source type: one multiply-add is two), each dtype against its own peak (16-bit, TF32, FP8). The
peaks are the data sheet's dense boost-clock figures; clocks were left as the card set them
(--clock-control none), so a card running below boost reads below 100 % even when saturated.
"""

from __future__ import annotations

import re
from typing import Any

from irscope.kernel.hardware import Chip

_TENSOR_OPS = re.compile(r"^sm__ops_path_tensor_src_([a-z0-9]+)(?:_[a-z0-9_]+)?\.sum$")
_PEAK_OF = {"fp16": "tflops_16", "bf16": "tflops_16", "tf32": "tflops_tf32", "fp8": "tflops_fp8"}


def point(raw: dict[str, Any], chip: Chip | None) -> dict[str, float | None]:
    """duration_ns, dram_bytes, dram_gbps, dram_peak_share, tensor_flops, tensor_tflops, tensor_peak_share,
    peak_dram_gbps, peak_tensor_tflops (None where the report or the chip table has no figure)."""
    ns = _num(raw.get("gpu__time_duration.sum"))
    read, write = _num(raw.get("dram__bytes_read.sum")), _num(raw.get("dram__bytes_write.sum"))
    dram = read + write if read is not None and write is not None else None
    out: dict[str, float | None] = {
        "duration_ns": ns,
        "dram_bytes": dram,
        "dram_gbps": None,
        "dram_peak_share": None,
        "tensor_flops": None,
        "tensor_tflops": None,
        "tensor_peak_share": None,
        "peak_dram_gbps": None,
        "peak_tensor_tflops": None,
    }
    if chip is not None:
        out["peak_dram_gbps"] = chip.hbm_tbps * 1000
    if ns and dram is not None:
        out["dram_gbps"] = gbps = dram / ns  # bytes per ns = GB/s
        if chip is not None:
            out["dram_peak_share"] = gbps / (chip.hbm_tbps * 1000)
    flops_by_type: dict[str, float] = {}
    for name, value in raw.items():
        if (m := _TENSOR_OPS.match(name)) and (v := _num(value)):
            flops_by_type[m.group(1)] = flops_by_type.get(m.group(1), 0.0) + v
    if not any(n.startswith("sm__ops_path_tensor_src_") for n in raw):
        return out  # the report has no tensor counters: unknown, not 0
    flops = sum(flops_by_type.values())
    out["tensor_flops"] = flops
    if ns:
        out["tensor_tflops"] = flops / ns / 1000  # flops per ns / 1000 = TFLOP/s
        if chip is not None:
            peaks = [getattr(chip, _PEAK_OF[t], None) if t in _PEAK_OF else None for t in flops_by_type]
            if flops == 0:
                out["tensor_peak_share"] = 0.0
            elif len(known := [p for p in peaks if p]) == len(peaks):  # every peak known
                out["tensor_peak_share"] = sum(f / ns / 1000 / p for f, p in zip(flops_by_type.values(), known))
            dominant = max(flops_by_type, key=flops_by_type.__getitem__) if flops else "fp16"
            out["peak_tensor_tflops"] = getattr(chip, _PEAK_OF.get(dominant, "tflops_16"), None)
    return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None
