"""Parallel compile in `irscope sweep`: wall time of a 6-config sweep with --jobs 1 against --jobs N.

    python benchmarks/bench_sweep.py [--reps 3] [--jobs 2]

The sweep is the matmul example for h100 over num_warps 4,8 x num_stages 2,3,4, each run with an
empty irscope cache (so every config compiles) and alternating 1 and N jobs. Wall clock of the
whole `irscope sweep` process, medians over --reps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIG = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"


def run(jobs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, IRSCOPE_CACHE_DIR=os.path.join(tmp, "cache"))
        cmd = [
            sys.executable,
            "-m",
            "irscope",
            "sweep",
            str(ROOT / "examples" / "matmul.py"),
            "--kernel",
            "matmul_kernel",
            "--target",
            "h100",
            "--signature",
            SIG,
            "--axis",
            "num_warps=4,8",
            "--axis",
            "num_stages=2,3,4",
            "-o",
            os.path.join(tmp, "out"),
            "--jobs",
            str(jobs),
            "--json",
        ]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    import triton

    run(1)  # page in Triton, ptxas and Python's caches once
    one, many = [], []
    for _ in range(a.reps):
        one.append(run(1))
        many.append(run(a.jobs))
    m1, mn = statistics.median(one), statistics.median(many)
    print(
        f"triton {triton.__version__}, {os.cpu_count()} CPUs: 6-config sweep, --jobs 1 {m1:.2f}s "
        f"({', '.join(f'{t:.2f}' for t in one)}), --jobs {a.jobs} {mn:.2f}s ({', '.join(f'{t:.2f}' for t in many)}): "
        f"speed-up {m1 / mn:.2f}x"
    )


if __name__ == "__main__":
    main()
