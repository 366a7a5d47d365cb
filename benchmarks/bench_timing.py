"""Precision of irscope's timing on a real GPU: A/A false positives at three kernel lengths, events and
graphs; A/B comparisons; the h200 recipe's matmul against torch.matmul (cuBLAS). One command:

    python benchmarks/bench_timing.py [--runs 20] [--budget 450] [--only 4us,200us,1.6ms,ab,cublas]
    python benchmarks/bench_timing.py --diagnose [--runs 20] [--diagnose-seconds 1.0] [--diagnose-budget 225]

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

--diagnose (issue 16, the 4 us vector add alone): `--runs` A/A runs of each of four methods, with the
binary loaded twice (as bench --aa) and with one binary: events one launch a sample (the former method),
events batched (K launches back to back a sample, measure.batch_size), graphs as they were (two
"mirrored" graphs that were one palindrome: variant 0 always first, after a lead-in run of itself; one
launch a sample), graphs as they are (every rotation and its mirror, batched). Runs are interleaved
(run i of every method before run i + 1 of any), each `--diagnose-seconds` of rounds, none started after
`--diagnose-budget` seconds; one markdown table at the end, and with $OUT set the whole output in
$OUT/timing-diagnose.log.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irscope import jobs
from irscope.compile import compiler
from irscope.timing import bench, launch, reference
from irscope.timing import measure as measure_mod
from irscope.timing.gpu_process import Runner
from irscope.timing.measure import measure
from irscope.timing.variant import Variant

MATMUL = ROOT / "examples" / "matmul.py"
ADD = ROOT / "examples" / "vector_add.py"


def matmul_args(n: int, dtype: str) -> dict:
    return launch.parse_args(
        f"a_ptr=randn({n}, {n}, {dtype}), b_ptr=randn({n}, {n}, {dtype}), "
        f"c_ptr=empty({n}, {n}, {dtype}), M={n}, N={n}, K={n}, stride_am={n}, stride_ak=1, "
        f"stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1"
    )


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


def time_here(
    variants: list[Variant],
    lw: launch.Launch,
    seed: int,
    graph: str,
    max_seconds: float,
    flops: str | None,
    device: str,
    batch: int | str = "auto",
) -> bench.BenchReport:
    """bench's measurement in this process: inputs from the seed, preflights, the check, the rounds, the report."""
    runner = Runner(lw, seed)
    for v in variants:
        runner.preflight(v)
    live = runner.check(variants)
    start = time.perf_counter()
    m = measure(runner.workbench(live), live, precision=0.003, max_seconds=max_seconds, graph=graph, batch=batch)
    return bench.report(variants, lw, m, time.perf_counter() - start, 0.003, flops, None, device)


def main() -> None:  # noqa: C901, PLR0915
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20, help="A/A runs per kernel and mode")
    ap.add_argument(
        "--budget",
        type=float,
        default=450,
        help="seconds from the start after which no A/A run starts (the A/B and tables follow)",
    )
    ap.add_argument(
        "--same-binary",
        action="store_true",
        help="A/A with one loaded binary for both variants (isolates the method from code placement)",
    )
    ap.add_argument("--only", default="", help="comma list of rows to run: 4us,200us,1.6ms,ab,cublas")
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="the 4 us A/A diagnosis alone: events/graphs, unbatched/batched, old/new graph order, "
        "binary loaded twice and once; one table (and $OUT/timing-diagnose.log)",
    )
    ap.add_argument("--diagnose-seconds", type=float, default=1.0, help="--diagnose: seconds of rounds a run")
    ap.add_argument(
        "--diagnose-budget",
        type=float,
        default=225,
        help="--diagnose: seconds from the start after which no run starts",
    )
    a = ap.parse_args()
    began = time.perf_counter()

    import torch
    import triton

    device = torch.cuda.get_device_name()
    print(f"{device}, triton {triton.__version__}, torch {torch.__version__}", flush=True)
    only = set(filter(None, a.only.split(",")))

    add_values = launch.parse_args(
        "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096"
    )
    add = jobs.resolve_one(
        jobs.Request(ADD, ("add_kernel",), named_args=named(add_values), consts=("BLOCK_SIZE=1024",)),
        "bench_timing times",
    )
    if a.diagnose:
        diagnose(
            Kernel("vector add 4096 fp32 (~4 us)", add, launch.Launch(add_values, (4, 1, 1)), None),
            a,
            began,
            device,
            f"{device} (triton {triton.__version__}, torch {torch.__version__})",
        )
        return
    v4096 = matmul_args(4096, "fp16")
    mm4096 = jobs.resolve_one(
        jobs.Request(
            MATMUL,
            ("matmul_kernel",),
            named_args=named(v4096),
            consts=("BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64", "GROUP_M=8"),
        ),
        "bench_timing times",
    )
    mm4096 = jobs.vary(mm4096, {"num_warps": 8}, "--try")
    grid4096 = (triton.cdiv(4096, 128) ** 2, 1, 1)
    v8192 = matmul_args(8192, "fp16")
    mm8192 = jobs.resolve_one(
        jobs.Request(MATMUL, ("matmul_kernel",), named_args=named(v8192), recipe="h200"), "bench_timing times"
    )
    grid8192 = (triton.cdiv(8192, 128) ** 2, 1, 1)
    kernels = {
        "4us": (lambda: Kernel("vector add 4096 fp32 (~4 us)", add, launch.Launch(add_values, (4, 1, 1)), None), 1.5),
        "200us": (
            lambda: Kernel("matmul 4096^3 fp16 (~200 us)", mm4096, launch.Launch(v4096, grid4096), "2*4096*4096*4096"),
            2.0,
        ),
        "1.6ms": (
            lambda: Kernel(
                "matmul 8192^3 fp16, h200 recipe (~1.6 ms)", mm8192, launch.Launch(v8192, grid8192), "2*8192*8192*8192"
            ),
            3.0,
        ),
    }

    ref_rows = []
    if not only or "cublas" in only:
        for dtype in ("fp16", "bf16"):
            values = matmul_args(8192, dtype)
            job = jobs.resolve_one(
                jobs.Request(MATMUL, ("matmul_kernel",), named_args=named(values), recipe="h200"), "bench_timing times"
            )
            lw = launch.Launch(values, grid8192)
            ref = reference.parse("torch.matmul(a_ptr, b_ptr)", lw)
            try:
                r = bench.run(
                    [Variant("h200 recipe", job.spec, job.settings)],
                    lw,
                    flops="2*8192*8192*8192",
                    max_seconds=10,
                    precision=0.003,
                    ref=ref,
                )
            except Exception as e:  # noqa: BLE001 - one line, and the other figures still come
                print(f"cuBLAS {dtype}: failed: {type(e).__name__}: {e}", flush=True)
                continue
            v = r.variants[0]
            c = v.versus_reference
            if c is None or r.ref is None or r.ref.summary is None:
                print(
                    f"cuBLAS {dtype}: no comparison: {v.status} {v.reason}; "
                    f"{r.ref.status + ' ' + r.ref.reason if r.ref else 'no ref'}"
                )
                continue
            ref_rows.append(
                (
                    dtype,
                    f"{v.summary.median * 1e3:.0f} us, {v.tflops:.0f} TFLOP/s",
                    f"{r.ref.summary.median * 1e3:.0f} us, {r.ref.tflops:.0f} TFLOP/s",
                    f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]",
                    c.verdict,
                    r.rounds,
                    (r.ref.reason or "same result") if r.ref.status == "ok" else r.ref.status,
                )
            )
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
                    r = time_here(
                        k.variants(same_binary=a.same_binary), k.launch, i, mode, max_seconds, k.flops, device
                    )
                except Exception as e:  # noqa: BLE001
                    print(f"  {key} {label} run {i + 1}: failed: {type(e).__name__}: {e}", flush=True)
                    continue
                c = r.variants[1].versus_baseline
                if c is None:
                    print(
                        f"  {key} {label} run {i + 1}: no comparison: "
                        + "; ".join(f"{v.name} {v.status} {v.reason}" for v in r.variants),
                        flush=True,
                    )
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
            clock_text = (
                f"{min(clocks):.0f}-{max(clocks):.0f} MHz" if clocks else (r.clocks.get("why_not", "") if done else "")
            )
            rows.append(
                (
                    k.title,
                    label,
                    done,
                    false_verdicts,
                    excl,
                    sum(abs(d) <= 1.0 for d in deltas),
                    max((abs(d) for d in deltas), default=float("nan")),
                    sorted(rounds)[len(rounds) // 2] if rounds else 0,
                    clock_text,
                    dropped,
                    method,
                )
            )
            print(
                f"{key} {label}: {done} runs, {false_verdicts} false verdicts, {excl} CIs exclude 0, "
                f"{time.perf_counter() - began:.0f} s so far",
                flush=True,
            )
        del k
        gc.collect()
        torch.cuda.empty_cache()

    ab_rows = []
    if (not only or "ab" in only) and time.perf_counter() - began < a.budget + 60:
        k200 = Kernel("matmul 4096^3", mm4096, launch.Launch(v4096, grid4096), "2*4096*4096*4096")
        for title, sets in [
            ("num_warps 4 vs 8", [("num_warps=4", {"num_warps": 4}), ("num_warps=8", {"num_warps": 8})]),
            (
                "num_stages 3 vs 4",
                [
                    ("num_stages=3", {"num_warps": 8, "num_stages": 3}),
                    ("num_stages=4", {"num_warps": 8, "num_stages": 4}),
                ],
            ),
        ]:
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
                print(
                    f"A/B {title}: no comparison: " + "; ".join(f"{x.name} {x.status} {x.reason}" for x in r.variants)
                )
                continue
            ab_rows.append(
                (
                    title,
                    f"{b.summary.median * 1e3:.1f} us ({b.tflops:.0f} TFLOP/s)",
                    f"{v.summary.median * 1e3:.1f} us ({v.tflops:.0f} TFLOP/s)",
                    f"{c.delta_percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]",
                    f"{v.name} {c.verdict}",
                    r.rounds,
                )
            )
            print(f"A/B {title}: " + " | ".join(str(x) for x in ab_rows[-1]), flush=True)
        del k200
        gc.collect()
        torch.cuda.empty_cache()

    print_tables(
        f"{device} (triton {triton.__version__}, torch {torch.__version__}; {time.perf_counter() - began:.0f} s)",
        rows,
        ab_rows,
        ref_rows,
    )


# ---------------------------------------------------------------- --diagnose (issue 16)


def old_schedule(n: int, round_index: int, runs: int) -> list[int]:
    """measure.schedule as it was: odd rounds the even round reversed (for an even number of runs, a
    palindrome: the same order)."""
    rot = (round_index // 2) % n
    base = list(range(rot, n)) + list(range(rot))
    seq: list[int] = []
    for r in range(runs):
        seq += base if r % 2 == 0 else base[::-1]
    return seq[::-1] if round_index % 2 else seq


def old_capture(live: list, runs: int, run_one, round_index: int) -> tuple:
    """measure._capture as it was: the graphs of rounds 0 and 1 (old_schedule) alone, whatever round asks,
    each with a lead-in run of its first variant."""
    import torch

    seq = old_schedule(len(live), round_index % 2, runs)
    slots = [(i, measure_mod._events(external=True)) for i in seq]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run_one(live[seq[0]])
        for i, ev in slots:
            run_one(live[i], ev)
    g.replay()
    torch.cuda.synchronize()
    return g, slots


@contextlib.contextmanager
def old_graph_order(on: bool):
    """measure's graphs captured in the former order while on."""
    saved = measure_mod._capture
    if on:
        measure_mod._capture = old_capture
    try:
        yield
    finally:
        measure_mod._capture = saved


DIAGNOSE_METHODS = [  # (label, graph, batch, old graph order)
    ("events, 1 launch a sample (before)", "off", 1, False),
    ("events, batched (now)", "off", "auto", False),
    ("graphs, 2 palindromic graphs, 1 launch a sample (before)", "on", 1, True),
    ("graphs, rotated + mirrored, batched (now)", "on", "auto", False),
]


class Tee:
    """stdout, and a copy of everything written to a log file."""

    def __init__(self, stream, path: Path):
        self.stream, self.file = stream, open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in diagnose

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stream.flush()


def diagnose(k: Kernel, a, began: float, device: str, where: str) -> None:
    """--diagnose: the four methods x two binary setups, run i of each before run i + 1 of any."""
    log = None
    if os.environ.get("OUT"):
        log = Tee(sys.stdout, Path(os.environ["OUT"]) / "timing-diagnose.log")
        sys.stdout = log
    configs = [
        (label, graph, batch, old, same) for same in (False, True) for label, graph, batch, old in DIAGNOSE_METHODS
    ]
    stats = {
        c: {
            "deltas": [],
            "false": 0,
            "excl": 0,
            "rounds": [],
            "batch": set(),
            "below": 0,
            "failed": 0,
            "method": "",
            "notes": [],
        }
        for c in configs
    }
    print(
        f"--diagnose: {k.title}, {a.runs} A/A runs of {len(configs)} setups, {a.diagnose_seconds:g} s of rounds "
        f"each, none started after {a.diagnose_budget:g} s",
        flush=True,
    )
    try:
        for i in range(a.runs):
            if time.perf_counter() - began > a.diagnose_budget:
                print(f"budget spent: {i} runs of each", flush=True)
                break
            for c in configs:
                label, graph, batch, old, same = c
                st = stats[c]
                what = f"{label} / {'one binary' if same else 'binary twice'}"
                try:
                    with old_graph_order(old):
                        r = time_here(
                            k.variants(same_binary=same),
                            k.launch,
                            i,
                            graph,
                            a.diagnose_seconds,
                            k.flops,
                            device,
                            batch=batch,
                        )
                except Exception as e:  # noqa: BLE001 - one line, and the other setups still run
                    st["failed"] += 1
                    print(f"  {what} run {i + 1}: failed: {type(e).__name__}: {e}", flush=True)
                    continue
                c_ = r.variants[1].versus_baseline
                if c_ is None:
                    st["failed"] += 1
                    print(
                        f"  {what} run {i + 1}: no comparison: "
                        + "; ".join(f"{v.name} {v.status} {v.reason}" for v in r.variants),
                        flush=True,
                    )
                    continue
                st["deltas"].append(c_.delta_percent)
                st["false"] += c_.verdict in ("faster", "slower")
                st["excl"] += c_.ci_high < 1 or c_.ci_low > 1
                st["rounds"].append(r.rounds)
                st["batch"].add(r.batch)
                st["below"] += c_.note.startswith("below resolution")
                st["method"] = r.method
                if c_.note and c_.note not in st["notes"]:
                    st["notes"].append(c_.note)
                print(run_line(what, i, r) + f", {r.batch} launch{'es' if r.batch > 1 else ''} a sample", flush=True)
            gc.collect()  # the runs' CUDA graphs and their memory pools
        print_diagnosis(where, configs, stats, time.perf_counter() - began)
    finally:
        if log is not None:
            sys.stdout = log.stream
            log.file.close()


def print_diagnosis(where: str, configs: list, stats: dict, seconds: float) -> None:
    print(f"\n## 4 us A/A diagnosis on {where} ({seconds:.0f} s)\n")
    print(
        "vector add 4096 fp32; false verdict = faster/slower at +-1 % (goal <= 1 in 20); CI excludes 0 = the "
        "95 % interval's misses (about 1 in 20 expected); K = launches back to back a sample\n"
    )
    print(
        "| method | binaries | runs | false verdicts | CI excludes 0 | abs delta <= 1 % | max abs delta "
        "| mean delta | K | median rounds | below-resolution notes |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in configs:
        label, _, _, _, same = c
        st = stats[c]
        d, n = st["deltas"], len(st["deltas"])
        mx = f"{max(abs(x) for x in d):.3f}%" if d else "-"
        mean = f"{sum(d) / n:+.3f}%" if d else "-"
        rounds = sorted(st["rounds"])[n // 2] if n else 0
        ks = ",".join(str(x) for x in sorted(st["batch"])) or "-"
        failed = f" ({st['failed']} failed)" if st["failed"] else ""
        print(
            f"| {label} | {'one' if same else 'loaded twice'} | {n}{failed} | {st['false']} of {n} | "
            f"{st['excl']} of {n} | {sum(abs(x) <= 1.0 for x in d)} of {n} | {mx} | {mean} | {ks} | {rounds} "
            f"| {st['below']} of {n} |"
        )
    seen = set()
    for c in configs:
        st = stats[c]
        if st["method"] and c[0] not in seen:
            seen.add(c[0])
            print(f"\n{c[0]}: {st['method']}")
            for note in st["notes"][:2]:
                print(f"  e.g. {note}")


def run_line(what: str, i: int, r: bench.BenchReport) -> str:
    """One A/A run: the delta, its CI, the verdict, rounds, median, runs a round, the timer's tick."""
    c = r.variants[1].versus_baseline
    strict = c.ci_high < 1 or c.ci_low > 1
    s0 = r.variants[0].summary
    return (
        f"  {what} run {i + 1:2d}: {c.delta_percent:+.3f}% [{(c.ci_low - 1) * 100:+.3f}, "
        f"{(c.ci_high - 1) * 100:+.3f}] {c.verdict}{' (CI excludes 0)' if strict else ''}; {r.rounds} rounds "
        f"({r.rounds_run} run), median {s0.median * 1e3:.2f} us, {r.runs_per_round} runs/round, tick "
        f"{r.tick_ms * 1e6:.0f} ns" + (f"; {c.note}" if c.note else "")
    )


def print_tables(where: str, rows: list, ab_rows: list, ref_rows: list) -> None:
    """The markdown tables for docs/benchmarks.md."""
    print(f"\n## irscope timing on {where}\n")
    print(
        "A/A: identical kernels; false verdict = faster/slower at the +-1 % margin (goal <= 1 in 20); "
        "CI excludes 0 = the 95 % interval's own misses (about 1 in 20 expected)\n"
    )
    print(
        "| kernel | mode | runs | false verdicts | CI excludes 0 | abs delta <= 1 % | max abs delta | median rounds "
        "| SM clocks | rounds dropped (clock) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for title, label, done, fv, ex, within, mx, rounds, clock_text, dropped, _ in rows:
        print(
            f"| {title} | {label} | {done} | {fv} of {done} | {ex} of {done} | {within} of {done} | {mx:.3f}% "
            f"| {rounds} | {clock_text} | {dropped} |"
        )
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
        print(
            "\nThe h200 recipe's matmul (examples/matmul.py) against torch.matmul, 8192^3, one irscope bench each "
            '(--recipe h200 --ref "torch.matmul(a_ptr, b_ptr)"); ratio = kernel time / torch time\n'
        )
        print("| dtype | h200 recipe | torch.matmul | ratio [95 % CI] | verdict (+-1 %) | rounds | torch's result |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in ref_rows:
            print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
