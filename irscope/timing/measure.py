"""The measurement, in the timing process: warm-up, then interleaved rounds until the ratios are precise.

Every variant runs once a round, in rotated order, each run preceded by a restore of the tensors
the variants write and an L2 flush, and bracketed by CUDA events (or replayed inside a CUDA
graph); the GPU then rests so that it is busy `duty` of the time. Rounds go on until every
ratio's confidence interval is within the precision asked for (against the baseline, or for a
sweep against the leader, where clearly slower variants are dropped early), or the budget is
spent. Which variants run, on what buffers, is the Runner's (gpu_process.py): it hands a Workbench.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

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
GRAPH_BELOW_MS = 0.1     # auto: kernels shorter than this are timed inside CUDA graphs
GRAPH_RUNS = 10          # runs captured in one graph (each with its restore, flush and events)
PRUNE_AFTER = 4          # rounds before a sweep drops a variant by the confidence interval of its ratio
PRUNE_EARLY = (2, 0.25)  # ... and before that: after 2 rounds, one 25 % behind the leader in both


def measure(workbench: Workbench, live: list[Variant], *, warmup: int = 2, min_rounds: int = 20,
            max_rounds: int = 2000, max_seconds: float = 20.0, precision: float = 0.005, graph: str = "off",
            prune: float | None = None, duty: float = DUTY) -> dict[str, Any]:
    """Fill each live variant's samples_ms: warm-up, then interleaved rounds until precise enough.

    `live`: the variants whose outputs passed the check against the baseline (Runner.check).
    Each run is preceded by a restore of the written tensors and an L2 flush (a 256 MiB memset)
    and bracketed by CUDA events; each round is followed by idle time so that the GPU is busy
    `duty` of the time (_rest). With graph="on" (or "auto" and a kernel under GRAPH_BELOW_MS),
    each variant's GRAPH_RUNS runs (restore, flush, events and all) are captured in one CUDA
    graph that is replayed once a round: no CPU launch path and no launch jitter in what the
    events see. Events are the default: the launch is queued behind the flush, so the CPU's
    launch path stays out of them anyway, and on the H200 graphs showed A/A offsets of 1-3 %
    on a 4 us kernel that events did not (docs/benchmarks.md). With `prune` (sweeps), after
    PRUNE_AFTER rounds a variant is dropped once the CI of its paired ratio to the current
    leader lies wholly above 1 + prune (before that, from PRUNE_EARLY rounds, once each of its
    paired ratios is 25 % above: several times slower configs stop costing rounds at once); the
    rest go on, so the contenders get the rounds.
    """
    import torch

    if not live:
        return {"rounds": 0, "seconds": 0.0, "method": ""}
    work, written, pristine = workbench.work, workbench.written, workbench.pristine
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")

    def run_one(v: Variant, go, events=None):
        inputs.restore(work, pristine, written)
        flush.zero_()
        if events:
            events[0].record()
        go()
        if events:
            events[1].record()

    go = {v.name: launcher(v, work, workbench.launch) for v in live}
    warm: dict[str, list[float]] = {v.name: [] for v in live}
    for _ in range(max(1, warmup)):
        pending, round_start = [], time.perf_counter()
        for v in live:
            pending.append((v, _events()))
            run_one(v, go[v.name], pending[-1][1])
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, (start, end) in pending:
            warm[v.name].append(start.elapsed_time(end))
    fastest = min(timing.median(t) for t in warm.values())
    use_graph = graph == "on" or (graph == "auto" and fastest < GRAPH_BELOW_MS)

    method = f"CUDA events around each launch, rounds at {duty:.0%} duty"
    if use_graph:
        try:
            graphs, graph_events = {}, {}
            for v in live:
                evs = [_events(external=True) for _ in range(GRAPH_RUNS)]
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for pair in evs:
                        run_one(v, go[v.name], pair)
                graphs[v.name], graph_events[v.name] = g, evs
                g.replay()  # the first replay uploads the graph: not a sample
            torch.cuda.synchronize()
            method = (f"CUDA graphs: {GRAPH_RUNS} runs a replay, events inside the graph, "
                      f"the median of each replay one sample, rounds at {duty:.0%} duty")
        except Exception as e:  # noqa: BLE001 - e.g. timing events in graphs unsupported (older ROCm, torch)
            use_graph = False
            torch.cuda.synchronize()
            method += f" (CUDA graph capture failed: {str(e).strip().splitlines()[0][:120] if str(e).strip() else e!r})"

    start_time = time.perf_counter()
    rounds = 0
    while rounds < max_rounds:
        round_start = time.perf_counter()
        order = live[rounds % len(live):] + live[:rounds % len(live)]
        pending = []
        for v in order:
            if use_graph:
                graphs[v.name].replay()
                pending.append((v, graph_events[v.name]))
            else:
                events = _events()
                run_one(v, go[v.name], events)
                pending.append((v, [events]))
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, pairs in pending:
            # one sample per variant and round: the runs of one replay share its conditions, so
            # counting them as independent samples would narrow every interval about threefold
            v.samples_ms.append(timing.median([s.elapsed_time(e) for s, e in pairs]))
        rounds += 1
        if prune is not None and rounds >= PRUNE_EARLY[0] and len(live) > 1:
            live = _prune(live, prune if rounds >= PRUNE_AFTER else max(prune, PRUNE_EARLY[1]), rounds)
        if rounds >= min_rounds or (prune is not None and len(live) == 1 and rounds >= PRUNE_AFTER * 2):
            spent = time.perf_counter() - start_time
            if spent > max_seconds or _precise(live, precision, leader=prune is not None):
                break
        elif time.perf_counter() - start_time > max_seconds:
            break
    return {"rounds": rounds, "seconds": time.perf_counter() - start_time, "method": method}


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


def _prune(live: list[Variant], margin: float, rounds: int) -> list[Variant]:
    """Drop the variants whose paired ratio to the leader is, with 95 % confidence, above 1 + margin."""
    leader = min(live, key=lambda v: timing.median(v.samples_ms))
    keep = []
    for v in live:
        if v is not leader:
            c = timing.compare(leader.samples_ms, v.samples_ms)
            if c.ci_low > 1 + margin:
                v.dropped = (f"dropped after {rounds} rounds: {c.delta_percent:+.1f}% "
                             f"[{(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}] against {leader.name}")
                continue
        keep.append(v)
    return keep


def _precise(live: list[Variant], precision: float, leader: bool = False) -> bool:
    """Every ratio's CI within the target: against the baseline, or (sweeps) against the leader."""
    ref = min(live, key=lambda v: timing.median(v.samples_ms)) if leader else live[0]
    if len(live) == 1:
        s = timing.summarize(ref.samples_ms)
        return (s.ci_high - s.ci_low) / 2 <= precision * s.median
    return all(timing.precise_enough(ref.samples_ms, v.samples_ms, precision) for v in live if v is not ref)
