"""Cost of `irscope dump` against a bare `triton.compile` of the same kernel, and of a cached repeat.

    python benchmarks/bench_dump.py [--reps 5]

For each kernel and target, in one process with Triton's cache bypassed
(always_compile), it alternates:
  bare        triton.compile(ASTSource for the same specialization)            (all targets)
  bare+sass   the same plus SASS from the cubin with the wheel's nvdisasm   (NVIDIA: what
              a user runs to see the same stages irscope shows)
  irscope     irscope's dump job, cache off: compile, SASS, stats, files on disk
and reports medians. A first compile of an unrelated kernel pays Triton's one-time
start-up before anything is timed. Then it times a repeated `irscope dump` CLI
call served from irscope's cache (wall clock of the whole process).
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
sys.path.insert(0, str(ROOT))

CASES = [
    ("vector_add.py", None, "*fp32, *fp32, *fp32, i32:16, 1024"),
    ("softmax.py", None, "*fp32, *fp32, i32:16, i32:16, i32, i32, 1024, 4"),
    (
        "matmul.py",
        "matmul_kernel",
        "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8",
    ),
]
TARGETS = ["cuda:90", "hip:gfx942"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    os.environ["IRSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="irscope-bench-cache-")
    import triton
    from triton import knobs

    from irscope import adapter, jobs
    from irscope.compile import compiler, dump

    def job_for(file: str, kernel: str | None, signature: str, target: str) -> jobs.Job:
        request = jobs.Request(ROOT / "examples" / file, (kernel,) if kernel else (), signature, target=target)
        return jobs.resolve_one(request, "the benchmark compiles")

    def bare(spec, settings, with_sass: bool):
        options, signature, constexprs, attrs = compiler.bind(spec, settings)
        src = adapter.make_source(spec.fn, signature, constexprs, attrs)
        with knobs.compilation.scope():
            knobs.compilation.always_compile = True
            k = triton.compile(src, target=settings.target.to_triton(), options=options.__dict__)
        if with_sass and settings.target.is_nvidia:
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(k.asm["cubin"])
                f.flush()
                subprocess.run([adapter.nvdisasm_path(), "-c", f.name], capture_output=True, check=True)

    # one-time start-up (LLVM, ptxas page-in) on an unrelated specialization
    for t in TARGETS:
        warm = job_for("vector_add.py", None, "*fp16, *fp16, *fp16, i32, 64", t)
        bare(warm.spec, warm.settings, True)

    print(f"triton {triton.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, reps={args.reps}")
    print(f"{'kernel':<14} {'target':<11} {'bare':>8} {'bare+sass':>10} {'irscope':>9} {'ratio':>6}")
    out = Path(tempfile.mkdtemp(prefix="irscope-bench-out-"))
    for file, kernel, sig in CASES:
        for t in TARGETS:
            job = job_for(file, kernel, sig, t)
            spec, settings = job.spec, job.settings
            nvidia = settings.target.is_nvidia
            times = {"bare": [], "bare+sass": [], "irscope": []}
            for _ in range(args.reps):
                for name in times:
                    if name == "bare+sass" and not nvidia:
                        continue
                    start = time.perf_counter()
                    if name == "irscope":
                        dump.dump(spec, settings, out, use_cache=False)
                    else:
                        bare(spec, settings, name == "bare+sass")
                    times[name].append(time.perf_counter() - start)
            med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
            base = med["bare+sass"] if nvidia else med["bare"]
            print(
                f"{spec.kernel:<14} {t:<11} {med['bare']:>7.3f}s {med['bare+sass']:>9.3f}s "
                f"{med['irscope']:>8.3f}s {med['irscope'] / base:>5.2f}x"
            )

    # cached repeat, whole CLI process
    cmd = [
        sys.executable,
        "-m",
        "irscope",
        "dump",
        str(ROOT / "examples" / "matmul.py"),
        "--kernel",
        "matmul_kernel",
        "--target",
        "h100",
        "--signature",
        CASES[2][2],
        "-o",
        str(out),
    ]
    subprocess.run(cmd, capture_output=True, check=True)
    walls = []
    for _ in range(args.reps):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
    print(
        f"cached repeat of `irscope dump` (matmul, h100), whole process: median {statistics.median(walls):.3f}s, "
        f"min {min(walls):.3f}s"
    )


if __name__ == "__main__":
    main()
