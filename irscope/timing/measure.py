"""The measurement, in the timing process: warm-up, then interleaved rounds until the ratios are precise.

Every variant runs in every round, `runs` times, in a balanced order (schedule): within a round the
order alternates (A B B A ...), and consecutive rounds are mirror images (round 2k+1 is round 2k
reversed), so a position effect (the first run after the idle gap, a clock ramp, the L2 or TLB state
one variant leaves the next) falls on every variant alike and cancels within each pair of rounds,
which statistics.paired_blocks averages. Each run is preceded by a restore of the tensors the
variants write and an L2 flush, and bracketed by CUDA events; one untimed run leads each round in.
The GPU then rests so that it is busy `duty` of the time. With graphs, one round is one replay of a
graph that holds every variant's runs in that same balanced order (two mirrored graphs, replayed in
alternation; each first replay discarded): one graph per variant, replayed one after another, had
timed identical kernels 1-3 % apart on a 4 us kernel (docs/timing-h200-triton3.6.log).
A variant's sample in a round is the mean of its runs there: a mean of runs quantized to the
timer's tick (32 ns on the H200) is not stuck to a tick as their median is.
Clocks are watched (clocks.py): rounds run below CLOCK_FLOOR of the median clock are dropped in pairs.
Rounds go on until every ratio's CI is within the precision asked for (against the baseline, or for
a sweep against the leader, where clearly slower variants are dropped early), or the budget is spent.
A reference (--ref, a torch call) is one more variant: timed alike, never the leader, never dropped.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

from irscope.timing import clocks as clock_watch
from irscope.timing import inputs
from irscope.timing import statistics as timing
from irscope.timing.launch import Launch
from irscope.timing.variant import Variant, launcher


@dataclass
class Workbench:
    """What every timed run works on: one set of buffers for all variants, restored from the pristine
    inputs (only the tensors some variant writes) before each run, and the launch."""

    work: dict[str, Any]
    pristine: dict[str, Any]
    written: set[str]
    launch: Launch


DUTY = 0.5               # the fraction of the rounds' wall time the GPU is kept busy (_rest)
# auto: kernels shorter than this would be timed inside CUDA graphs. 0: never, for now. On the H200
# (triton 3.6, 4 us vector add, A/A with one binary) graph replays said faster/slower in 20 of 20 runs,
# deltas up to 9 %, whatever the order inside the graph; events with one run a round: 0 of 20.
GRAPH_BELOW_MS = 0.0
GRAPH_BIAS_NOTE = ("graph mode is biased for short kernels (A/A on the H200: up to 9 % at 4 us; within 0.4 % at "
                   "200 us and 1.6 ms); for kernels under 100 us prefer events (--graph off)")
RUNS_TARGET_MS = 0.1     # a round holds at least this much of each variant's kernel time ...
MAX_RUNS = 10            # ... in at most this many runs of it
GRAPH_RUNS = MAX_RUNS    # (the former name)
PRUNE_AFTER = 4          # rounds before a sweep drops a variant by the confidence interval of its ratio
PRUNE_EARLY = (2, 0.25)  # ... and before that: after 2 rounds, one 25 % behind the leader in both
RAW_KEPT = 20000         # raw run times kept to find the timer's tick


def schedule(n: int, round_index: int, runs: int) -> list[int]:
    """The variants' indices in run order for one round: `runs` passes alternating forwards and
    backwards over a rotation of the variants; odd rounds are the previous round reversed."""
    rot = (round_index // 2) % n
    base = list(range(rot, n)) + list(range(rot))
    seq: list[int] = []
    for r in range(runs):
        seq += base if r % 2 == 0 else base[::-1]
    return seq[::-1] if round_index % 2 else seq


def runs_per_round(fastest_ms: float, graph: bool) -> int:
    """Runs of each variant a round: with events one (each bracketed by its own events after its own
    flush), in graphs an even number filling RUNS_TARGET_MS.

    Measured on the H200 (4 us vector add, A/A with one binary, 20 runs each): events with 10 runs a
    round said 'faster/slower' in 2 of 20 (6 of 20 with the binary loaded twice); with one run a round,
    0 of 20. The many short rounds cost nothing the budget does not already bound.
    """
    if not graph:
        return 1
    k = max(1, min(MAX_RUNS, math.ceil(RUNS_TARGET_MS / max(fastest_ms, 1e-6))))
    return max(2, k + k % 2)


def measure(workbench: Workbench, live: list[Variant], *, warmup: int = 2, min_rounds: int = 20,
            max_rounds: int = 2000, max_seconds: float = 20.0, precision: float = 0.005, graph: str = "off",
            prune: float | None = None, duty: float = DUTY, clock_floor: float = clock_watch.CLOCK_FLOOR,
            watch: clock_watch.ClockWatch | None = None) -> dict[str, Any]:
    """Fill each live variant's samples_ms: warm-up, then balanced interleaved rounds until precise enough.

    `live`: the variants whose outputs passed the check against the baseline (Runner.check), and a
    reference (v.ref) if asked. With graph="on" (or "auto" and a kernel under GRAPH_BELOW_MS), a
    round is a replay of one graph holding every variant's runs (no CPU launch path in it). With
    `prune` (sweeps), from PRUNE_AFTER rounds a variant is dropped once the CI of its paired ratio
    to the current leader lies wholly above 1 + prune (from PRUNE_EARLY rounds, once each of its
    ratios is 25 % above): several times slower configs stop costing rounds at once.
    """
    import torch

    if not live:
        return {"rounds": 0, "seconds": 0.0, "method": ""}
    everyone = list(live)
    work, written, pristine = workbench.work, workbench.written, workbench.pristine
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    go = {v.name: launcher(v, work, workbench.launch) for v in live}

    def run_one(v: Variant, events=None) -> None:
        inputs.restore(work, pristine, written)
        flush.zero_()
        if events:
            events[0].record()
        go[v.name]()
        if events:
            events[1].record()

    watch = watch if watch is not None else clock_watch.ClockWatch.for_current_device()
    watch.start()
    warm: dict[str, list[float]] = {v.name: [] for v in live}
    for r in range(max(1, warmup)):
        pending, round_start = [], time.perf_counter()
        for i in schedule(len(live), r, 1):
            pending.append((live[i], _events()))
            run_one(live[i], pending[-1][1])
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, (start, end) in pending:
            warm[v.name].append(start.elapsed_time(end))
    kernels = [v for v in live if v.ref is None] or live
    fastest = min(timing.median(warm[v.name]) for v in kernels)
    use_graph = graph == "on" or (graph == "auto" and fastest < GRAPH_BELOW_MS)
    runs = runs_per_round(fastest, use_graph)

    graphs: dict[tuple[str, ...], list] = {}
    method = (f"CUDA events around each run; {runs} run{'s' if runs > 1 else ''} of each variant a round in "
              f"mirrored order after an untimed lead-in run; rounds at {duty:.0%} duty")
    if use_graph:
        try:
            graphs[_key(live)] = _capture(live, runs, run_one)
            method = (f"CUDA graphs: one replay a round holds every variant, {runs} runs each in mirrored order "
                      f"after an untimed lead-in run, events inside; two mirrored graphs in alternation, first "
                      f"replays discarded; a sample is the mean of a variant's runs in a replay; rounds at "
                      f"{duty:.0%} duty; {GRAPH_BIAS_NOTE}")
        except Exception as e:  # noqa: BLE001 - e.g. timing events in graphs unsupported (older ROCm, torch)
            use_graph = False
            torch.cuda.synchronize()
            runs = runs_per_round(fastest, False)
            first = str(e).strip().splitlines()[0][:120] if str(e).strip() else repr(e)
            method += f" (CUDA graph capture failed: {first})"

    slots_pool = [_events() for _ in range(len(live) * runs)]
    raw: list[float] = []
    round_clocks: list[float | None] = []
    start_time = time.perf_counter()
    rounds = 0
    while rounds < max_rounds:
        t0 = time.perf_counter()
        if use_graph:
            key = _key(live)
            if key not in graphs:  # a sweep dropped variants: the graph of those left
                graphs[key] = _capture(live, runs, run_one)
            g, slots = graphs[key][rounds % 2]
            g.replay()
            pending = [(live[i], ev) for i, ev in slots]
        else:
            seq = schedule(len(live), rounds, runs)
            run_one(live[seq[0]])  # the lead-in: untimed
            pending = []
            for j, i in enumerate(seq):
                run_one(live[i], slots_pool[j])
                pending.append((live[i], slots_pool[j]))
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        round_clocks.append(watch.clock_between(t0, t1))
        _rest(t1 - t0, duty)
        times: dict[str, list[float]] = {v.name: [] for v in live}
        for v, (s, e) in pending:
            times[v.name].append(s.elapsed_time(e))
        for v in live:
            v.samples_ms.append(sum(times[v.name]) / len(times[v.name]))
            if len(raw) < RAW_KEPT:
                raw.extend(times[v.name])
        rounds += 1
        if rounds % 2:
            continue  # rounds pair up (mirror images): decide after whole pairs
        if prune is not None and rounds >= PRUNE_EARLY[0] and sum(v.ref is None for v in live) > 1:
            live = _prune(live, prune if rounds >= PRUNE_AFTER else max(prune, PRUNE_EARLY[1]), rounds)
        if rounds >= min_rounds or (prune is not None and len(live) == 1 and rounds >= PRUNE_AFTER * 2):
            spent = time.perf_counter() - start_time
            if spent > max_seconds or _precise(live, precision, leader=prune is not None):
                break
        elif time.perf_counter() - start_time > max_seconds:
            break
    end_time = time.perf_counter()
    watch.stop()
    slow = clock_watch.slow_rounds(round_clocks, clock_floor)
    for v in everyone:
        v.samples_ms = [s for i, s in enumerate(v.samples_ms) if i not in slow]
    report = clock_watch.summarize_clocks(watch, round_clocks, len(slow), start_time, end_time, clock_floor)
    return {"rounds": rounds - len(slow), "rounds_run": rounds, "seconds": end_time - start_time,
            "method": method, "runs_per_round": runs, "tick_ms": timing.timer_tick(raw),
            "clocks": asdict(report)}


def _key(live: list[Variant]) -> tuple[str, ...]:
    return tuple(v.name for v in live)


def _capture(live: list[Variant], runs: int, run_one) -> list:
    """Two graphs, mirror images (schedule of rounds 0 and 1), each holding a lead-in run and every
    variant's runs with their events; each replayed once (the upload: not a sample)."""
    import torch

    out = []
    for parity in (0, 1):
        seq = schedule(len(live), parity, runs)
        slots = [(i, _events(external=True)) for i in seq]
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run_one(live[seq[0]])
            for i, ev in slots:
                run_one(live[i], ev)
        g.replay()
        out.append((g, slots))
    torch.cuda.synchronize()
    return out


def _rest(busy_seconds: float, duty: float) -> None:
    """Leave the GPU idle so that it is busy `duty` of the time (by default 50 %: as long as the round).

    Back-to-back rounds of large kernels hold a GPU at its power limit, where clocks drop and
    the differences between variants shrink: on the H200, the leading bf16 8192^3 GEMM configs
    of a sweep timed back to back came within ~1 % of each other, while Triton's do_bench
    (short bursts, what an autotuner sees) put them up to 8 % apart. Idle time between rounds
    keeps the average power down, closer to the clocks a launch in a burst sees.
    """
    if duty < 1:
        time.sleep(busy_seconds * (1 - duty) / duty)


def _events(external: bool = False):
    import torch

    kwargs = {"external": True} if external else {}
    return torch.cuda.Event(enable_timing=True, **kwargs), torch.cuda.Event(enable_timing=True, **kwargs)


def _leader(live: list[Variant]) -> Variant:
    """The fastest kernel (a reference is never the leader)."""
    return min((v for v in live if v.ref is None), key=lambda v: timing.median(v.samples_ms))


def _prune(live: list[Variant], margin: float, rounds: int) -> list[Variant]:
    """Drop the variants whose paired ratio to the leader is, with 95 % confidence, above 1 + margin."""
    leader = _leader(live)
    keep = []
    for v in live:
        if v is not leader and v.ref is None:
            c = timing.compare(leader.samples_ms, v.samples_ms)
            if c.ci_low > 1 + margin:
                v.dropped = (f"dropped after {rounds} rounds: {c.delta_percent:+.1f}% "
                             f"[{(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}] against {leader.name}")
                continue
        keep.append(v)
    return keep


def _precise(live: list[Variant], precision: float, leader: bool = False) -> bool:
    """Every ratio's CI within the target: against the baseline, or (sweeps) against the leader."""
    ref = _leader(live) if leader else live[0]
    if len(live) == 1:
        s = timing.summarize(ref.samples_ms)
        return (s.ci_high - s.ci_low) / 2 <= precision * s.median
    return all(timing.precise_enough(ref.samples_ms, v.samples_ms, precision) for v in live if v is not ref)
