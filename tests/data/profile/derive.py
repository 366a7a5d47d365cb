"""How matmul_ns1.json and matmul_ns3.json were made (run once; the tests read the JSON, not this).

Source: benchmarks/ncu_record_h200's recordings on the H200 (ncu 2025.3.1.0, Triton 3.6.0) of
examples/matmul.py at 4096^3 fp16, num_stages=1 and num_stages=3: `ncu --page source --csv
--print-source cuda,sass` (matmul{1,3}_source_cuda_sass.csv: one aggregated row per Python line, then
its SASS instructions) and `ncu --page details --csv` (matmul{1,3}_details.csv). Kept from them: the
per-line rows of examples/matmul.py (warp-stall samples "Warp Stall Sampling (All Samples)", the
stall_* columns that are not "(Not Issued)", "Instructions Executed", bytes as "L2 Theoretical Sectors
Global" x 32) and the totals (Duration; DRAM throughput in GB/s and as a share of peak; tensor TFLOP/s
as 2*4096^3 / duration, against the H200's 989 dense fp16 TFLOP/s). Lines of Triton's standard.py
(tl.cdiv) count in the totals only.

    python tests/data/profile/derive.py /tmp/rec tests/data/profile
"""

import csv
import json
import sys
from pathlib import Path

KERNEL_FILE = "/work/main/examples/matmul.py"


def num(s: str) -> float:
    s = s.replace(",", "")
    return 0 if s in ("", "-") else float(s)


def lines(path: Path) -> tuple[list[dict], dict]:
    out, totals, file, header = [], {"samples": 0, "stalls": {}, "executed": 0, "bytes": 0}, None, None
    for row in csv.reader(path.open()):
        if row and row[0] == "File Path":
            file = row[1]
        elif row and row[0] == "Line No":
            header = row
        elif header and len(row) > 4 and row[0] and row[2] == "-":       # a line's aggregated row
            r = dict(zip(header[4:], row[4:]))
            stalls = {k[6:]: int(num(v)) for k, v in r.items()
                      if k.startswith("stall_") and "Not Issued" not in k and num(v)}
            e = {"file": file, "line": int(row[0]), "text": row[1].strip(),
                 "samples": int(num(r["Warp Stall Sampling (All Samples)"])), "stalls": stalls,
                 "executed": int(num(r["Instructions Executed"])),
                 "bytes": int(num(r["L2 Theoretical Sectors Global"])) * 32}
            for k in ("samples", "executed", "bytes"):
                totals[k] += e[k]
            for k, v in stalls.items():
                totals["stalls"][k] = totals["stalls"].get(k, 0) + v
            if file == KERNEL_FILE and e["samples"]:
                out.append(e)
    for e in out:
        e["share"] = round(e["samples"] / totals["samples"], 4)
    return out, totals


def details(path: Path) -> dict:
    got = {}
    for row in csv.reader(path.open()):
        if len(row) > 14 and row[12] in ("Duration", "DRAM Throughput", "Memory Throughput"):
            got[(row[11], row[12], row[13])] = num(row[14])
    us = got[("GPU Speed Of Light Throughput", "Duration", "us")]
    gbps = got.get(("Memory Workload Analysis", "Memory Throughput", "Gbyte/s")) or \
        got[("Memory Workload Analysis", "Memory Throughput", "Tbyte/s")] * 1000
    tflops = 2 * 4096 ** 3 / (us * 1e-6) / 1e12
    return {"duration_ns": round(us * 1000), "dram_gbps": gbps,
            "dram_peak_share": got[("GPU Speed Of Light Throughput", "DRAM Throughput", "%")] / 100,
            "tensor_tflops": round(tflops, 1), "tensor_peak_share": round(tflops / 989, 3)}


def main(rec: Path, out: Path) -> None:
    for n in (1, 3):
        per_line, totals = lines(rec / f"matmul{n}_source_cuda_sass.csv")
        doc = {"irscope_profile": 1, "kernel": "matmul_kernel", "tool": "ncu 2025.3.1.0", "device": "NVIDIA H200",
               "command": f"ncu --set full --import-source yes python examples/matmul.py (num_stages={n})",
               "totals": {**totals, **details(rec / f"matmul{n}_details.csv")}, "lines": per_line}
        (out / f"matmul_ns{n}.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
