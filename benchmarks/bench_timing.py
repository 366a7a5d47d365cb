"""Precision of irscope's timing on a real GPU: A/A false positives at three kernel lengths, events and
graphs; A/B comparisons; the h200 recipe's matmul against torch.matmul (cuBLAS). One command:

    python benchmarks/bench_timing.py [--runs 20] [--budget 450] [--only 4us,200us,1.6ms,ab,cublas]

First the cuBLAS comparison (below), then A/A: two identical variants (the same kernel, its binary loaded twice, as bench --aa does) timed by
irscope's measurement `--runs` times for each kernel and mode: a ~4 us vector add (4096 fp32), a
~200 us matmul (4096^3 fp16) and a ~1.6 ms matmul (8192^3 fp16, the h200 recipe), with CUDA events
and with CUDA graphs. Each run makes fresh inputs (seed = run) and calls measure.measure in this
process (the timing process's code; a new process per run would cost 5 s each). Counted per row:
false verdicts (faster/slower at the default +-1 % margin; goal <= 1 in 20), CIs that exclude 0 (the
interval's own false-positive rate, nominal 5 %: about 1 in 20 is expected), |delta| <= 1 % (goal
19 of 20 for the matmuls), max |delta|, rounds, clocks and rounds dropped for a low clock.
A/B: num_warps 4 vs 8 and num_stages 3 vs 4 on the 4096^3 matmul, with verdicts.
cuBLAS: `irscope bench`'s own path (bench.run: the timing process, compile, preflight) with
--recipe h200 and --ref "torch.matmul(a_ptr, b_ptr)" at 8192^3, fp16 and bf16: the ratio and its CI.
The tables at the end are markdown, to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irscope import jobs
from irscope.core import compiler
from irscope.timing import bench, launch, reference
from irscope.timing.gpu_process import Runner
from irscope.timing.measure import measure
from irscope.timing.variant import Variant

MATMUL = ROOT / "examples" / "matmul.py"
ADD = ROOT / "examples" / "vector_add.py"


def matmul_args(n: int, dtype: str) -> dict:
    return launch.parse_args(f"a_ptr=randn({n}, {n}, {dtype}), b_ptr=randn({n}, {n}, {dtype}), "
                             f"c_ptr=empty({n}, {n}, {dtype}), M={n}, N={n}, K={n}, stride_am={n}, stride_ak=1, "
                             f"stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1")


def named(values: dict) -> tuple[str, ...]:
    return tuple(f"{k}={launch.spec_element(v)}" for k, v in values.items())


class Kernel:
    """One kernel to time A/A: its job, launch and the two loaded binaries (A and A')."""

    def __init__(self, title: str, job: jobs.Job, lw: launch.Launch, flops: str | None):
        self.title, self.job, self.launch, self.flops = title, job, lw, flops
        self.art = compiler.compile_spec(job.spec, job.settings, fresh=False, with_sass=False)
        self.binaries = [compiler.load_binary(job.spec, job.settings) for _ in range(2)]

    def variants(self, names=("A", "A'"), same_binary: bool = False) -> list[Variant]:
        out = []
        for name, binary in zip(names, self.binaries[:1] * 2 if same_binary else self.binaries):
            v = Variant(name, self.job.spec, self.job.settings)
            v.binary = binary
            out.append(v)
        return out


def time_here(variants: list[Variant], lw: launch.Launch, seed: int, graph: str, max_seconds: float,
              flops: str | None, device: str) -> bench.BenchReport:
    """bench's measurement in this process: inputs from the seed, preflights, the check, the rounds, the report."""
    runner = Runner(lw, seed)
    for v in variants:
        runner.preflight(v)
    live = runner.check(variants)
    start = time.perf_counter()
    m = measure(runner.workbench(live), live, precision=0.003, max_seconds=max_seconds, graph=graph)
    return bench.report(variants, lw, m, time.perf_counter() - start, 0.003, flops, None, device)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20, help="A/A runs per kernel and mode")
    ap.add_argument("--budget", type=float, default=450,
                    help="seconds from the start after which no A/A run starts (the A/B and tables follow)")
    ap.add_argument("--same-binary", action="store_true",
                    help="A/A with one loaded binary for both variants (isolates the method from code placement)")
    ap.add_argument("--only", default="", help="comma list of rows to run: 4us,200us,1.6ms,ab,cublas")
    a = ap.parse_args()
    began = time.perf_counter()

    import torch
    import triton

    device = torch.cuda.get_device_name()
    print(f"{device}, triton {triton.__version__}, torch {torch.__version__}", flush=True)
    only = set(filter(None, a.only.split(",")))

    add_values = launch.parse_args("x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), "
                                   "n_elements=4096")
    add = jobs.resolve_one(jobs.Request(ADD, ("add_kernel",), named_args=named(add_values),
                                        consts=("BLOCK_SIZE=1024",)), "bench_timing times")
    v4096 = matmul_args(4096, "fp16")
    mm4096 = jobs.resolve_one(jobs.Request(MATMUL, ("matmul_kernel",), named_args=named(v4096),
                                           consts=("BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64", "GROUP_M=8")),
                              "bench_timing times")
    mm4096 = jobs.vary(mm4096, {"num_warps": 8}, "--try")
    grid4096 = (triton.cdiv(4096, 128) ** 2, 1, 1)
    v8192 = matmul_args(8192, "fp16")
    mm8192 = jobs.resolve_one(jobs.Request(MATMUL, ("matmul_kernel",), named_args=named(v8192), recipe="h200"),
                              "bench_timing times")
    grid8192 = (triton.cdiv(8192, 128) ** 2, 1, 1)
    kernels = {
        "4us": (lambda: Kernel("vector add 4096 fp32 (~4 us)", add, launch.Launch(add_values, (4, 1, 1)), None), 1.5),
        "200us": (lambda: Kernel("matmul 4096^3 fp16 (~200 us)", mm4096, launch.Launch(v4096, grid4096),
                                 "2*4096*4096*4096"), 2.0),
        "1.6ms": (lambda: Kernel("matmul 8192^3 fp16, h200 recipe (~1.6 ms)", mm8192, launch.Launch(v8192, grid8192),
                                 "2*8192*8192*8192"), 3.0),
    }

    ref_rows = []
    if not only or "cublas" in only:
        for dtype in ("fp16", "bf16"):
            values = matmul_args(8192, dtype)
            job = jobs.resolve_one(jobs.Request(MATMUL, ("matmul_kernel",), named_args=named(values), recipe="h200"),
                                   "bench_timing times")
            lw = launch.Launch(values, grid8192)
            ref = reference.parse("torch.matmul(a_ptr, b_ptr)", lw)
            try:
                r = bench.run([Variant("h200 recipe", job.spec, job.settings)], lw, flops="2*8192*8192*8192",
                              max_seconds=10, precision=0.003, ref=ref)
            except Exception as e:  # noqa: BLE001 - one line, and the other figures still come
                print(f"cuBLAS {dtype}: failed: {type(e).__name__}: {e}", flush=True)
                continue
            v = r.variants[0]
            c = v.versus_reference
            if c is None or r.ref is None or r.ref.summary is None:
                print(f"cuBLAS {dtype}: no comparison: {v.status} {v.reason}; "
                      f"{r.ref.status + ' ' + r.ref.reason if r.ref else 'no ref'}")
                continue
            ref_rows.append((dtype, f"{v.summary.median * 1e3:.0f} us, {v.tflops:.0f} TFLOP/s",
                             f"{r.ref.summary.median * 1e3:.0f} us, {r.ref.tflops:.0f} TFLOP/s",
                             f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]", c.verdict, r.rounds,
                             (r.ref.reason or "same result") if r.ref.status == "ok" else r.ref.status))
            print(f"cuBLAS {dtype}: " + " | ".join(str(x) for x in ref_rows[-1]), flush=True)
            print(f"  method: {r.method}; clocks: {r.clocks}", flush=True)

    rows = []
    for key, (make, max_seconds) in kernels.items():
        if only and key not in only:
            continue
        k = make()
        for mode in ("off", "on"):
            label = "events" if mode == "off" else "graphs"
            deltas, false_verdicts, excl, rounds, dropped, clocks, method = [], 0, 0, [], 0, [], ""
            done = 0
            for i in range(a.runs):
                if time.perf_counter() - began > a.budget:
                    break
                try:
                    r = time_here(k.variants(same_binary=a.same_binary), k.launch, i, mode, max_seconds, k.flops, device)
                except Exception as e:  # noqa: BLE001
                    print(f"  {key} {label} run {i + 1}: failed: {type(e).__name__}: {e}", flush=True)
                    continue
                c = r.variants[1].versus_baseline
                if c is None:
                    print(f"  {key} {label} run {i + 1}: no comparison: "
                          + "; ".join(f"{v.name} {v.status} {v.reason}" for v in r.variants), flush=True)
                    continue
                done += 1
                deltas.append(c.delta_percent)
                false_verdicts += c.verdict in ("faster", "slower")
                strict = c.ci_high < 1 or c.ci_low > 1
                excl += strict
                rounds.append(r.rounds)
                dropped += r.clocks.get("dropped_rounds", 0)
                if r.clocks.get("sm_mhz"):
                    clocks += [r.clocks["sm_mhz"][0], r.clocks["sm_mhz"][2]]
                method = r.method
                print(run_line(f"{key} {label}", i, r), flush=True)
            clock_text = (f"{min(clocks):.0f}-{max(clocks):.0f} MHz" if clocks
                          else (r.clocks.get("why_not", "") if done else ""))
            rows.append((k.title, label, done, false_verdicts, excl, sum(abs(d) <= 1.0 for d in deltas),
                         max((abs(d) for d in deltas), default=float("nan")),
                         sorted(rounds)[len(rounds) // 2] if rounds else 0, clock_text, dropped, method))
            print(f"{key} {label}: {done} runs, {false_verdicts} false verdicts, {excl} CIs exclude 0, "
                  f"{time.perf_counter() - began:.0f} s so far", flush=True)
        del k
        gc.collect()
        torch.cuda.empty_cache()

    ab_rows = []
    if (not only or "ab" in only) and time.perf_counter() - began < a.budget + 60:
        k200 = Kernel("matmul 4096^3", mm4096, launch.Launch(v4096, grid4096), "2*4096*4096*4096")
        for title, sets in [("num_warps 4 vs 8", [("num_warps=4", {"num_warps": 4}), ("num_warps=8", {"num_warps": 8})]),
                            ("num_stages 3 vs 4", [("num_stages=3", {"num_warps": 8, "num_stages": 3}),
                                                   ("num_stages=4", {"num_warps": 8, "num_stages": 4})])]:
            vs = []
            for name, opts in sets:
                job = jobs.vary(mm4096, dict(opts), "--try")
                compiler.compile_spec(job.spec, job.settings, fresh=False, with_sass=False)
                v = Variant(name, job.spec, job.settings)
                v.binary = compiler.load_binary(job.spec, job.settings)
                vs.append(v)
            r = time_here(vs, k200.launch, 0, "off", 4.0, k200.flops, device)
            b, v = r.variants
            c = v.versus_baseline
            if c is None:
                print(f"A/B {title}: no comparison: " + "; ".join(f"{x.name} {x.status} {x.reason}" for x in r.variants))
                continue
            ab_rows.append((title, f"{b.summary.median * 1e3:.1f} us ({b.tflops:.0f} TFLOP/s)",
                            f"{v.summary.median * 1e3:.1f} us ({v.tflops:.0f} TFLOP/s)",
                            f"{c.delta_percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]",
                            f"{v.name} {c.verdict}", r.rounds))
            print(f"A/B {title}: " + " | ".join(str(x) for x in ab_rows[-1]), flush=True)
        del k200
        gc.collect()
        torch.cuda.empty_cache()

    print_tables(f"{device} (triton {triton.__version__}, torch {torch.__version__}; "
                 f"{time.perf_counter() - began:.0f} s)", rows, ab_rows, ref_rows)


def run_line(what: str, i: int, r: bench.BenchReport) -> str:
    """One A/A run: the delta, its CI, the verdict, rounds, median, runs a round, the timer's tick."""
    c = r.variants[1].versus_baseline
    strict = c.ci_high < 1 or c.ci_low > 1
    s0 = r.variants[0].summary
    return (f"  {what} run {i + 1:2d}: {c.delta_percent:+.3f}% [{(c.ci_low - 1) * 100:+.3f}, "
            f"{(c.ci_high - 1) * 100:+.3f}] {c.verdict}{' (CI excludes 0)' if strict else ''}; {r.rounds} rounds "
            f"({r.rounds_run} run), median {s0.median * 1e3:.2f} us, {r.runs_per_round} runs/round, tick "
            f"{r.tick_ms * 1e6:.0f} ns" + (f"; {c.note}" if c.note else ""))


def print_tables(where: str, rows: list, ab_rows: list, ref_rows: list) -> None:
    """The markdown tables for docs/benchmarks.md."""
    print(f"\n## irscope timing on {where}\n")
    print("A/A: identical kernels; false verdict = faster/slower at the +-1 % margin (goal <= 1 in 20); "
          "CI excludes 0 = the 95 % interval's own misses (about 1 in 20 expected)\n")
    print("| kernel | mode | runs | false verdicts | CI excludes 0 | abs delta <= 1 % | max abs delta | median rounds "
          "| SM clocks | rounds dropped (clock) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for title, label, done, fv, ex, within, mx, rounds, clock_text, dropped, _ in rows:
        print(f"| {title} | {label} | {done} | {fv} of {done} | {ex} of {done} | {within} of {done} | {mx:.3f}% "
              f"| {rounds} | {clock_text} | {dropped} |")
    for title, label, *_, method in rows:
        if method:
            print(f"\n{title}, {label}: {method}")
    if ab_rows:
        print("\nA/B on the 4096^3 fp16 matmul (CUDA events)\n")
        print("| comparison | first | second | second vs first | verdict | rounds |")
        print("| --- | --- | --- | --- | --- | --- |")
        for row in ab_rows:
            print("| " + " | ".join(str(x) for x in row) + " |")
    if ref_rows:
        print("\nThe h200 recipe's matmul (examples/matmul.py) against torch.matmul, 8192^3, one irscope bench each "
              "(--recipe h200 --ref \"torch.matmul(a_ptr, b_ptr)\"); ratio = kernel time / torch time\n")
        print("| dtype | h200 recipe | torch.matmul | ratio [95 % CI] | verdict (+-1 %) | rounds | torch's result |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in ref_rows:
            print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
