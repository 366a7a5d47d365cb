"""Precision of irscope's timing on a real GPU: A/A runs, and real A/B comparisons.

    python benchmarks/bench_timing.py [--runs 20] [--size 4096] [--short-runs 20]

A/A: the example matmul timed against itself `--runs` times (each run a fresh `bench.run`, two
identical variants, interleaved); the goal is |delta| <= 1 % in at least 19 of 20 runs. For
reference, the spread of five plain `triton.testing.do_bench` calls on the same kernel is printed too.
Short A/A: the same with a 4096-element vector add (a few microseconds), which bench times inside
CUDA graphs.
A/B: num_warps 4 vs 8 and num_stages 3 vs 4 on the same matmul, with verdicts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irscope import jobs  # noqa: E402 - after the path above
from irscope.timing import bench, inputs, launch  # noqa: E402
from irscope.timing.variant import Variant, launcher  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--max-seconds", type=float, default=4.0)
    ap.add_argument("--short-runs", type=int, default=20, help="A/A runs of a few-microsecond kernel (CUDA graphs)")
    ap.add_argument("--short-graph", default="auto", help="bench's graph mode for them: auto (graphs) or off")
    ap.add_argument("--skip-matmul", action="store_true", help="only the short A/A runs")
    a = ap.parse_args()

    import torch
    import triton

    n = a.size
    args_text = (f"a_ptr=randn({n}, {n}, fp16), b_ptr=randn({n}, {n}, fp16), c_ptr=empty({n}, {n}, fp16), "
                 f"M={n}, N={n}, K={n}, stride_am={n}, stride_ak=1, stride_bk={n}, stride_bn=1, "
                 f"stride_cm={n}, stride_cn=1")
    values = launch.parse_args(args_text)
    named = tuple(f"{k}={launch.spec_element(v)}" for k, v in values.items())
    consts = ("BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64", "GROUP_M=8")
    # no target given: the local GPU's
    matmul = jobs.resolve_one(jobs.Request(ROOT / "examples" / "matmul.py", ("matmul_kernel",), named_args=named,
                                           consts=consts), "bench_timing times")
    grid = (triton.cdiv(n, 128) * triton.cdiv(n, 128), 1, 1)
    lw = launch.Launch(values, grid)
    flops = f"2*{n}*{n}*{n}"

    def variants(*option_sets):
        """One variant per (name, options): the options on top of the matmul's job, as bench --try does."""
        out = []
        for name, opts in option_sets:
            job = jobs.vary(matmul, dict(opts), "--try")
            out.append(Variant(name, job.spec, job.settings))
        return out

    print(f"{torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}, "
          f"matmul {n}x{n}x{n} fp16, 128x128x64 tiles")

    # reference: plain do_bench spread on the same kernel
    base = variants(("base", {"num_warps": 8}))
    bench.compile_variants(base)
    dev = inputs.materialize(lw, "cuda")
    go = launcher(base[0], dev, lw)
    if not a.skip_matmul:
        plain = [triton.testing.do_bench(go, warmup=25, rep=100) for _ in range(5)]
        cv = statistics.stdev(plain) / statistics.mean(plain) * 100
        print(f"plain do_bench x5: {', '.join(f'{t:.4f}' for t in plain)} ms  (CV {cv:.2f}%)")

    deltas = []
    start = time.perf_counter()
    for i in range(0 if a.skip_matmul else a.runs):
        r = bench.run(variants(("A", {"num_warps": 8}), ("A'", {"num_warps": 8})), lw, flops=flops,
                      max_seconds=a.max_seconds, precision=0.003, seed=i)
        c = r.variants[1].versus_baseline
        if c is None:
            print(f"A/A run {i + 1}: no comparison: " + "; ".join(f"{v.name} {v.status} {v.reason}" for v in r.variants))
            continue
        deltas.append(c.delta_percent)
        print(f"A/A run {i + 1:2d}: delta {c.delta_percent:+.3f}%  CI [{(c.ci_low - 1) * 100:+.3f}, "
              f"{(c.ci_high - 1) * 100:+.3f}]  {c.verdict}; {r.rounds} rounds, median "
              f"{r.variants[0].summary.median * 1e3:.1f} us, {r.variants[0].tflops:.0f} TFLOP/s")
    within = sum(abs(d) <= 1.0 for d in deltas)
    if deltas:
        print(f"A/A: |delta| <= 1% in {within} of {len(deltas)} runs; max |delta| "
              f"{max(abs(d) for d in deltas):.3f}%; {time.perf_counter() - start:.0f} s")

    # a kernel of a few microseconds: timed inside CUDA graphs (graph="auto" picks them), A/A again
    small = launch.parse_args("x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), "
                              "n_elements=4096")
    add_named = tuple(f"{k}={launch.spec_element(v)}" for k, v in small.items())
    add = jobs.resolve_one(jobs.Request(ROOT / "examples" / "vector_add.py", ("add_kernel",), named_args=add_named,
                                        consts=("BLOCK_SIZE=1024",)), "bench_timing times")
    small_deltas, start = [], time.perf_counter()
    for i in range(a.short_runs):
        pair = [Variant(name, add.spec, add.settings) for name in ("A", "A'")]
        r = bench.run(pair, launch.Launch(small, (4, 1, 1)), max_seconds=2.0, precision=0.003, seed=i,
                      graph=a.short_graph)
        c = r.variants[1].versus_baseline
        if c is None:
            print(f"short A/A run {i + 1}: no comparison: "
                  + "; ".join(f"{v.name} {v.status} {v.reason}" for v in r.variants))
            continue
        small_deltas.append(c.delta_percent)
        s0 = r.variants[0].summary
        print(f"short A/A run {i + 1:2d}: delta {c.delta_percent:+.3f}%  CI [{(c.ci_low - 1) * 100:+.3f}, "
              f"{(c.ci_high - 1) * 100:+.3f}]  {c.verdict}; {r.rounds} rounds, median {s0.median * 1e3:.2f} us, "
              f"IQR {s0.iqr * 1e3:.2f} us; {r.method}")
    if small_deltas:
        print(f"short A/A (vector add, 4096 fp32): |delta| <= 1% in {sum(abs(d) <= 1.0 for d in small_deltas)} of "
              f"{len(small_deltas)} runs; max |delta| {max(abs(d) for d in small_deltas):.3f}%; "
              f"{time.perf_counter() - start:.0f} s")

    for title, sets in [] if a.skip_matmul else [("num_warps 4 vs 8", [("num_warps=4", {"num_warps": 4}), ("num_warps=8", {"num_warps": 8})]),
                        ("num_stages 3 vs 4", [("num_stages=3", {"num_warps": 8, "num_stages": 3}),
                                               ("num_stages=4", {"num_warps": 8, "num_stages": 4})])]:
        r = bench.run(variants(*sets), lw, flops=flops, max_seconds=a.max_seconds, precision=0.003)
        b, v = r.variants
        c = v.versus_baseline
        if c is None:
            print(f"A/B {title}: no comparison: " + "; ".join(f"{x.name} {x.status} {x.reason}" for x in r.variants))
            continue
        print(f"A/B {title}: {b.summary.median * 1e3:.1f} us ({b.tflops:.0f} TFLOP/s) vs "
              f"{v.summary.median * 1e3:.1f} us ({v.tflops:.0f} TFLOP/s): {c.delta_percent:+.2f}% "
              f"[{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}] -> {v.name} {c.verdict}; "
              f"{r.rounds} rounds")


if __name__ == "__main__":
    main()
