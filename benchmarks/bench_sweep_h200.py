"""The 48-config bf16 matmul sweep at 8192^3 on the GPU machine, against an exhaustive autotuner-style loop.

    python3 benchmarks/bench_sweep_h200.py [--jobs 16]

1. `irscope sweep ... --time` over BLOCK_M 64,128 x BLOCK_N 64,128,256 x BLOCK_K 32,64 x num_warps 4,8 x
   num_stages 3,4 (48 configs), with empty irscope and Triton caches: wall clock of the whole command.
2. The exhaustive reference: a sequential loop that launches each config through Triton's JIT and
   times it with triton.testing.do_bench (what Triton's autotuner does), with its own empty cache.
3. The sweep's winner is timed with do_bench like the others, and compared with the loop's best.
4. With --search optuna|random: a search of a 6,000-config space (BLOCK_M, BLOCK_N 16..256:pow2 x BLOCK_K
   16..128:pow2 x num_warps 2..8:pow2 x num_stages 2..6 x GROUP_M 1..8:pow2) under --time-budget S, with
   its own empty caches and database; its winner timed with do_bench too, against the 48-config best.
   Optuna missing (pip install 'irscope[search]'): one line says so and the search runs as random.
5. The same-rounds verdict: the search's winner, the 48-config sweep's winner and the exhaustive loop's
   best timed together in ONE irscope measurement (sweep.timed.time_together: interleaved, L2-flushed
   rounds, as the sweep's finalists re-time), each ratio with its 95 % CI and verdict. do_bench's own
   spread is 2-3 %, too wide to judge a 2 % target by; the paired rounds are not.
6. The last lines: a markdown table (budget, configs tried, stop reason, winner, ratios [CI], do_bench
   deltas), for docs/benchmarks.md. With OUT set, the whole log is also written to $OUT/sweep-search.log.

    python3 benchmarks/bench_sweep_h200.py --jobs 16 --search optuna --time-budget 240
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = 8192
SIG = "*bf16, *bf16, *bf16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
ARGS = (
    f"a_ptr=randn({N}, {N}, bf16), b_ptr=randn({N}, {N}, bf16), c_ptr=empty({N}, {N}, bf16), M={N}, N={N}, "
    f"K={N}, stride_am={N}, stride_ak=1, stride_bk={N}, stride_bn=1, stride_cm={N}, stride_cn=1"
)
AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [3, 4]}
LAUNCH_GRID = "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"
SEARCH_AXES = [
    "BLOCK_M=16..256:pow2",
    "BLOCK_N=16..256:pow2",
    "BLOCK_K=16..128:pow2",
    "num_warps=2..8:pow2",
    "num_stages=2..6",
    "GROUP_M=1..8:pow2",
]


class Tee:
    """stdout to the terminal and to $OUT/sweep-search.log."""

    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for st in self.streams:
            st.write(text)
            st.flush()
        return len(text)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


def same_rounds(a, named: dict[str, dict[str, int]]) -> tuple[dict[str, str], object]:
    """The configs timed together in one irscope measurement: (role -> the variant that timed it, report).
    Roles that are the same config share one variant (their ratio is 1 by construction)."""
    sys.path.insert(0, str(ROOT))
    from irscope import jobs
    from irscope.sweep.timed import time_together
    from irscope.timing.plan import bench_variants

    request = jobs.Request(ROOT / "examples" / "matmul.py", ("matmul_kernel",), SIG)
    _, launch = bench_variants(request, (), ARGS, LAUNCH_GRID)
    base = jobs.resolve_one(request, "bench times")
    full = {role: {"GROUP_M": 8, **cfg} for role, cfg in named.items()}  # GROUP_M: the signature's 8 unless set
    configs, owner = {}, {}
    for role, cfg in full.items():
        same = next((r for r, c in configs.items() if c == cfg), None)
        if same is None:
            configs[role] = cfg
        owner[role] = same or role
    report = time_together(base, launch, configs, max_seconds=a.same_seconds, duty=a.duty)
    return owner, report


def ratio_text(cmp) -> str:
    if cmp is None:
        return "not timed"
    return f"{cmp.ratio:.3f} [{cmp.ci_low:.3f}, {cmp.ci_high:.3f}] {cmp.verdict} ({cmp.delta_percent:+.1f} %)"


def parse_label(label: str) -> dict[str, int]:
    """'BLOCK_M=64, num_warps=4' -> {'BLOCK_M': 64, 'num_warps': 4}."""
    return {k.strip(): int(v) for k, v in (part.split("=") for part in label.split(", "))}


def run_search(a, strategy: str) -> tuple[dict, float]:
    """The search, with its own empty caches and database: (its --json document, wall seconds)."""
    tmp = Path(tempfile.mkdtemp(prefix="irscope-search-h200-"))
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp / "irscope-cache"), TRITON_CACHE_DIR=str(tmp / "triton-cache"))
    cmd = [
        sys.executable,
        "-m",
        "irscope",
        "sweep",
        str(ROOT / "examples" / "matmul.py"),
        "--kernel",
        "matmul_kernel",
        "--signature",
        SIG,
        "--jobs",
        str(a.jobs),
        "--time",
        "--args",
        ARGS,
        "--grid",
        LAUNCH_GRID,
        "--max-seconds",
        str(a.max_seconds),
        "--duty",
        str(a.duty),
        "--search",
        strategy,
        "--time-budget",
        str(a.time_budget),
        "--seed",
        "0",
        "-o",
        str(tmp / "out"),
        "--json",
    ]
    if a.trials:
        cmd += ["--trials", str(a.trials)]
    for axis in SEARCH_AXES:
        cmd += ["--axis", axis]
    start = time.perf_counter()
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit(f"search failed with {p.returncode}")
    doc = json.loads(p.stdout)
    s = doc["search"]
    for g in s.get("history", []):
        print(
            f"  generation at {g['at_s']:.0f} s ({g['spent']:.0%} of the budget): {g['proposed']} proposed, "
            f"{g['refined']} near the best; best so far {g['best'] or '-'}",
            file=sys.stderr,
        )
    statuses = {}
    for c in doc["configs"]:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    print(
        f"irscope sweep --search {strategy} over {6000} configs, --time-budget {a.time_budget:g} s: {wall:.1f} s "
        f"wall; {s['proposed']} tried in {s['generations']} generations, {s['pruned']} pruned statically, "
        f"{s['skipped']} skipped uncompiled; statuses {statuses}; stopped: {s['stopped']}; winner "
        f"{doc['winner']['config']} at {doc['winner']['median_ms'] * 1e3:.1f} us"
    )
    for note in doc.get("notes", []):
        print(f"  {note}")
    return doc, wall


def main() -> None:  # noqa: C901, PLR0915
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--max-seconds", type=float, default=3.0)
    ap.add_argument("--sweep-only", action="store_true", help="skip the exhaustive reference loop (~30 s)")
    ap.add_argument("--duty", type=float, default=0.5, help="irscope sweep --duty")
    ap.add_argument("--search", choices=("optuna", "random"), help="also search the 6,000-config space")
    ap.add_argument("--time-budget", type=float, default=120.0, help="the search's --time-budget")
    ap.add_argument("--trials", type=int, default=0, help="the search's --trials (0: only the time budget)")
    ap.add_argument(
        "--same-seconds",
        type=float,
        default=20.0,
        help="the same-rounds measurement's --max-seconds (search winner, 48-sweep winner, exhaustive best)",
    )
    a = ap.parse_args()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"]).mkdir(parents=True, exist_ok=True)
        log = open(Path(os.environ["OUT"]) / "sweep-search.log", "w")  # noqa: SIM115 - open for the whole run
        sys.stdout = Tee(sys.__stdout__, log)
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    searched = None
    if a.search:
        strategy = a.search
        if strategy == "optuna" and importlib.util.find_spec("optuna") is None:
            print("optuna is not installed here (pip install 'irscope[search]'): searching with --search random")
            strategy = "random"
        searched = run_search(a, strategy)

    tmp = Path(tempfile.mkdtemp(prefix="irscope-sweep-h200-"))
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp / "irscope-cache"), TRITON_CACHE_DIR=str(tmp / "triton-cache"))
    cmd = [
        sys.executable,
        "-m",
        "irscope",
        "sweep",
        str(ROOT / "examples" / "matmul.py"),
        "--kernel",
        "matmul_kernel",
        "--signature",
        SIG,
        "--jobs",
        str(a.jobs),
        "--time",
        "--args",
        ARGS,
        "--grid",
        LAUNCH_GRID,
        "--max-seconds",
        str(a.max_seconds),
        "--duty",
        str(a.duty),
        "-o",
        str(tmp / "out"),
        "--json",
    ]
    for key, values in AXES.items():
        cmd += ["--axis", f"{key}={','.join(map(str, values))}"]
    start, epoch = time.perf_counter(), time.time()
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    sweep_wall = time.perf_counter() - start
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit(f"sweep failed with {p.returncode}")
    doc = json.loads(p.stdout)
    statuses = {}
    for c in doc["configs"]:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    timed = [v for v in doc["timing"]["variants"] if v["summary"]]
    winner = doc["winner"]["config"]
    dropped = sum(1 for v in doc["timing"]["variants"] if v.get("dropped"))
    phases = doc["timing"].get("phases", {})
    print(
        f"irscope sweep, 48 configs, --jobs {a.jobs}: {sweep_wall:.1f} s wall (compile + rank + time); "
        f"statuses {statuses}; {len(timed)} timed in {doc['timing']['rounds']} rounds ({dropped} dropped early); "
        f"winner: {winner} at {doc['winner']['median_ms'] * 1e3:.1f} us"
    )
    print(
        f"  phases: parallel compile {doc.get('compile_seconds', 0):.2f} s wall; timing process: torch + CUDA up "
        f"{phases.get('start', 0):.2f} s after it started (during the compile), loads + preflights "
        f"{phases.get('preflight', 0):.2f} s (the first {phases.get('first_preflight', 0):.2f} s), checks + "
        f"warm-up + rounds {phases.get('measure', 0):.2f} s; bench part after the compile "
        f"{doc['timing']['seconds']:.2f} s"
    )
    marks = {"compile ends": doc.get("compile_end"), **{k[3:]: v for k, v in phases.items() if k.startswith("at_")}}
    print(
        "  timeline (s from the command's start): "
        + ", ".join(f"{name} {at - epoch:.2f}" for name, at in sorted(marks.items(), key=lambda kv: kv[1] or 0) if at)
        + f", command exits {sweep_wall:.2f}"
    )
    print(
        f"  in the timing process (s from its start): C helpers built {phases.get('prepared_utils', -1):.2f}, "
        f"torch + CUDA up {phases.get('start', 0):.2f}"
    )
    per = sorted(c["compile_seconds"] for c in doc["configs"])
    print(
        f"  one config in a worker: min {per[0]:.2f} s, median {per[len(per) // 2]:.2f} s, max {per[-1]:.2f} s; "
        f"sum {sum(per):.1f} s over {a.jobs} workers"
    )

    if a.sweep_only:
        return
    search_winner = parse_label(searched[0]["winner"]["config"]) if searched else None
    # exhaustive, autotuner-style: JIT launch + do_bench, one config after another, cold cache
    os.environ["TRITON_CACHE_DIR"] = str(tmp / "triton-cache-exhaustive")
    import torch
    import triton

    sys.path.insert(0, str(ROOT / "examples"))
    import matmul

    a_ = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b_ = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    c_ = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
    results = {}
    start = time.perf_counter()

    def do_bench(cfg: dict[str, int]) -> float:
        grid = (triton.cdiv(N, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)

        def go():
            matmul.matmul_kernel[grid](
                a_,
                b_,
                c_,
                N,
                N,
                N,
                N,
                1,
                N,
                1,
                N,
                1,
                BLOCK_M=cfg["BLOCK_M"],
                BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"],
                GROUP_M=cfg.get("GROUP_M", 8),
                num_warps=cfg["num_warps"],
                num_stages=cfg["num_stages"],
            )

        try:
            return triton.testing.do_bench(go, warmup=25, rep=100)
        except Exception as e:  # noqa: BLE001 - out of resources, whatever Triton calls it
            print(f"  {cfg}: {type(e).__name__}")
            return float("inf")

    for combo in itertools.product(*AXES.values()):
        cfg = dict(zip(AXES, combo))
        results[tuple(cfg.items())] = do_bench(cfg)
    loop_wall = time.perf_counter() - start
    best_cfg, best = min(results.items(), key=lambda kv: kv[1])
    label = lambda cfg: ", ".join(f"{k}={v}" for k, v in cfg)
    flops = 2 * N**3
    print(
        f"exhaustive loop (JIT + do_bench, sequential): {loop_wall:.1f} s; best {label(best_cfg)} at "
        f"{best * 1e3:.1f} us ({flops / best / 1e9:.0f} TFLOP/s)"
    )
    # the sweep's winner, timed the same way
    win_key = next(k for k in results if all(f"{n}={v}" in winner for n, v in k))
    print(
        f"sweep winner under do_bench: {results[win_key] * 1e3:.1f} us, "
        f"{(results[win_key] / best - 1) * 100:+.2f}% against the exhaustive best"
    )
    rows = {v["name"]: v for v in doc["timing"]["variants"]}
    best_row = rows.get(label(best_cfg))
    if best_row and best_row["summary"]:
        print(
            f"the exhaustive best in the sweep's rounds: {best_row['summary']['median'] * 1e3:.1f} us, "
            f"{best_row.get('dropped') or 'timed to the end'}"
        )
    ranked = sorted(results.items(), key=lambda kv: kv[1])[:5]
    print("do_bench top 5: " + "; ".join(f"{label(k)} {t * 1e3:.1f} us" for k, t in ranked))
    finalists = sorted(
        (v for v in doc["timing"]["variants"] if v["summary"] and not v.get("dropped")),
        key=lambda v: v["summary"]["median"],
    )
    print("sweep finalists: " + "; ".join(f"{v['name']} {v['summary']['median'] * 1e3:.1f} us" for v in finalists))
    sweep_delta = (results[win_key] / best - 1) * 100
    search_delta = None
    if search_winner is not None:
        t = min(do_bench(search_winner) for _ in range(3))
        search_delta = (t / best - 1) * 100
        print(
            f"search winner {searched[0]['winner']['config']} under do_bench (best of 3): {t * 1e3:.1f} us, "
            f"{search_delta:+.2f}% against the 48-config exhaustive best "
            f"({len(searched[0]['configs'])} of 6000 configs tried in {searched[1]:.0f} s)"
        )

    # the verdict: one irscope measurement, the same interleaved rounds for all three
    named = {"48-sweep winner": parse_label(winner), "exhaustive best": dict(best_cfg)}
    if search_winner is not None:
        named = {"search winner": search_winner, **named}
    start = time.perf_counter()
    owner, report = same_rounds(a, named)
    from irscope.sweep.timed import versus

    print(
        f"same rounds (irscope, one measurement, {report.rounds} rounds, {time.perf_counter() - start:.1f} s "
        f"with its compiles and start-up, on {report.device}):"
    )
    for v in report.variants:
        roles = [r for r, o in owner.items() if o == v.name]
        shown = f"{v.summary.median * 1e3:.1f} us" if v.summary else f"{v.status} {v.reason}"
        print(
            f"  {' = '.join(roles)}: {label(tuple(named[roles[0]].items()))}: {shown}{' dropped' if v.dropped else ''}"
        )

    def vs(role_a: str, role_b: str):
        """role_b against role_a (t_b / t_a); the same config: None and said so."""
        if owner[role_a] == owner[role_b]:
            return "same config (1.000)"
        return ratio_text(versus(report, owner[role_a], owner[role_b]))

    print(f"  48-sweep winner vs exhaustive best: {vs('exhaustive best', '48-sweep winner')}")
    if search_winner is None:
        return
    against_sweep, against_best = vs("48-sweep winner", "search winner"), vs("exhaustive best", "search winner")
    print(f"  search winner vs 48-sweep winner: {against_sweep}")
    print(f"  search winner vs exhaustive best: {against_best}")
    s_ = searched[0]["search"]
    print()
    print(
        "| budget | configs tried | stop reason | search winner | vs 48-sweep winner [95 % CI] | "
        "vs exhaustive best [95 % CI] | do_bench: search / 48-sweep winner vs exhaustive best |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {a.time_budget:g} s ({searched[1]:.0f} s wall) | {s_['proposed']} of 6000 ({s_['pruned']} pruned, "
        f"{s_.get('refined', 0)} refined, {s_['generations']} generations) | {s_['stopped']} | "
        f"{searched[0]['winner']['config']} | {against_sweep} | {against_best} | "
        f"{search_delta:+.2f} % / {sweep_delta:+.2f} % |"
    )


if __name__ == "__main__":
    main()
