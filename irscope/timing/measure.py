"""The measurement, in the timing process: warm-up, then interleaved rounds until the ratios are precise.

Every variant runs in every round, `runs` times, in a balanced order (schedule): within a round the
passes over the variants alternate (A B B A ...); round 2k+1 mirrors round 2k (its passes start from
the other end, so a linear drift inside a round, a clock ramp, cancels within the pair, which
statistics.paired_blocks averages); and every two rounds the order rotates, so over 2n rounds each of
n variants is first (the run after the idle gap) equally often and follows each of its neighbours
equally often. One untimed lead-in run leads each round in: the round's last variant, as if the rounds
ran back to back (the lead-in used to be the first variant, and in graphs that made variant 0 always
first and always after a run of itself: the two "mirrored" graphs of an even number of runs were one
palindrome). Each run is preceded by a restore of the tensors the variants write and an L2 flush
(a 256 MiB memset), and bracketed by CUDA events. The GPU then rests so that it is busy `duty` of the time.

Short kernels (a warm-up sample under BATCH_BELOW_MS, or `batch` asked for; from the warm-up's second
round its samples are held by the same spin, so that the CPU's launch is not in them) are timed batched (nvbench's
"batched"/hot measurement): one sample is a restore and flush, one untimed launch of the variant (it
pays for the memset's dirty L2 lines and the cold caches), then K launches of the same variant back to
back between one pair of events (K so that a batch lasts about BATCH_TARGET_MS, at most MAX_BATCH); the
sample is the elapsed time / K. A 4 us kernel run once right after the memset was timed mostly on
the memset's write-backs and the events' 32 ns ticks: identical kernels came out up to 1.5 % apart
(9 % in graphs) on the H200 (docs/benchmarks.md, issue 16). Batches alternate between variants in the
same balanced order as single runs. With events, the CPU's launches (several us each from Python)
would be slower than a short kernel and the GPU would wait for them inside the batch: a spin kernel
(torch.cuda._sleep) before each batch's start event holds the GPU while the CPU queues the batch,
long enough for 1.5 x the CPU's measured launch time of the batch (in graphs there is no CPU in between).

With graphs, one round is one replay of a graph that holds every variant's runs (or batches) in that
round's order (schedule), a lead-in and the events inside: 2n graphs (each rotation and its mirror),
captured as first needed, each first replay discarded, replayed in rotation.
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


DUTY = 0.5  # the fraction of the rounds' wall time the GPU is kept busy (_rest)
# auto: kernels shorter than this would be timed inside CUDA graphs. 0: never, for now. On the H200
# (triton 3.6, 4 us vector add, A/A with one binary) graph replays (unbatched, variant 0 always first)
# said faster/slower in 20 of 20 runs, deltas up to 9 %; events with one run a round: 0 of 20.
GRAPH_BELOW_MS = 0.0
GRAPH_BIAS_NOTE = (
    "graph mode is biased for short kernels timed one launch a sample (A/A on the H200: up to 9 % "
    "at 4 us; within 0.4 % at 200 us and 1.6 ms); for kernels under 100 us prefer events "
    "(--graph off) or batched samples"
)
RUNS_TARGET_MS = 0.1  # a round holds at least this much of each variant's kernel time ...
MAX_RUNS = 10  # ... in at most this many runs of it
GRAPH_RUNS = MAX_RUNS  # (the former name)
BATCH_BELOW_MS = 0.02  # batch="auto": kernels shorter than this (fastest held warm-up sample) are timed in batches ...
BATCH_TARGET_MS = 0.05  # ... of K launches back to back lasting about this long ...
MAX_BATCH = 256  # ... K at most this
SPIN_HZ = 2.5e9  # cycles a second assumed for the spin kernel (above any SM clock: spins err long)
SPIN_MARGIN_S = 20e-6  # the spin covers 1.5 x the CPU's launches of a batch, plus this
PRUNE_AFTER = 4  # rounds before a sweep drops a variant by the confidence interval of its ratio
PRUNE_EARLY = (2, 0.25)  # ... and before that: after 2 rounds, one 25 % behind the leader in both
RAW_KEPT = 20000  # raw run times kept to find the timer's tick


def schedule(n: int, round_index: int, runs: int) -> list[int]:
    """The variants' indices in run order for one round: `runs` passes alternating forwards and
    backwards over a rotation of the variants (rotated every two rounds); an odd round starts its
    passes from the other end (for one run, or any odd number, the previous round reversed; for an
    even number, where a round reversed is the round itself, the other variant first)."""
    rot = (round_index // 2) % n
    base = list(range(rot, n)) + list(range(rot))
    if round_index % 2:
        base = base[::-1]
    seq: list[int] = []
    for r in range(runs):
        seq += base if r % 2 == 0 else base[::-1]
    return seq


def lead_in(seq: list[int]) -> int:
    """The untimed run before a round: its last variant, as if the rounds ran back to back (each
    variant's first timed run then follows what it follows inside the rounds, in balance)."""
    return seq[-1]


def period(n: int) -> int:
    """Rounds after which schedule repeats: every rotation and its mirror (the graphs of graph mode)."""
    return 2 * n


def runs_per_round(fastest_ms: float, graph: bool) -> int:
    """Runs (or batches) of each variant a round: with events one (each bracketed by its own events
    after its own flush), in graphs an even number filling RUNS_TARGET_MS (fastest_ms: a run's time,
    a whole batch's when batched).

    Measured on the H200 (4 us vector add, A/A with one binary, 20 runs each): events with 10 runs a
    round said 'faster/slower' in 2 of 20 (6 of 20 with the binary loaded twice); with one run a round,
    0 of 20. The many short rounds cost nothing the budget does not already bound.
    """
    if not graph:
        return 1
    k = max(1, min(MAX_RUNS, math.ceil(RUNS_TARGET_MS / max(fastest_ms, 1e-6))))
    return max(2, k + k % 2)


def batch_size(fastest_ms: float, batch: int | str = "auto") -> int:
    """Launches a sample: "auto" (or None): 1 for kernels of BATCH_BELOW_MS or more, else enough for
    BATCH_TARGET_MS (at most MAX_BATCH); a number: that many (1 or 0: unbatched)."""
    if batch is None or batch == "auto":
        if fastest_ms >= BATCH_BELOW_MS:
            return 1
        return max(2, min(MAX_BATCH, math.ceil(BATCH_TARGET_MS / max(fastest_ms, 1e-6))))
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
        raise ValueError(f"batch {batch!r}: 'auto' or a number of launches a sample (0 or 1: one)")
    return max(1, min(MAX_BATCH, batch))


def spin_cycles(cpu_launch_s: float, batch: int) -> int:
    """Cycles of the spin kernel before a batch's start event (events mode): the CPU queues the batch,
    its events and launches, while the GPU spins."""
    return int((1.5 * (batch + 2) * cpu_launch_s + SPIN_MARGIN_S) * SPIN_HZ)


def method_line(use_graph: bool, runs: int, batch: int, n: int, duty: float, fastest_ms: float, spin: int = 0) -> str:
    """What was done, in words (the report's method line)."""
    if batch > 1:
        held = (
            f", a spin kernel of about {spin / SPIN_HZ * 1e6:.0f} us before the start event so that the CPU "
            f"has queued the batch"
            if spin
            else ""
        )
        sample = (
            f"{batch} launches back to back per sample, L2 warm after the first (each sample: an input "
            f"restore, an L2 flush, one untimed launch of the variant{held}, then the {batch} between one "
            f"pair of events; sample = elapsed / {batch})"
        )
        unit, units = "batch", "batches"
    else:
        sample = "one launch per sample, right after an input restore and an L2 flush"
        unit, units = "run", "runs"
    if use_graph:
        text = (
            f"CUDA graphs: one replay a round holds every variant, {runs} {units} each in mirrored order after "
            f"an untimed lead-in, events inside; {period(n)} graphs (every rotation and its mirror) replayed "
            f"in rotation, each first replay discarded; {sample}; a variant's sample in a round is the mean of "
            f"its {units} in the replay; rounds at {duty:.0%} duty"
        )
        if batch == 1 and fastest_ms < 0.1:
            text += f"; {GRAPH_BIAS_NOTE}"
        return text
    return (
        f"CUDA events around each {unit}; {runs} {unit if runs == 1 else units} of each variant a round in "
        f"mirrored order, rotated every two rounds, after an untimed lead-in {unit} of the round's last "
        f"variant; {sample}; rounds at {duty:.0%} duty"
    )


def measure(  # noqa: C901, PLR0913, PLR0915
    workbench: Workbench,
    live: list[Variant],
    *,
    warmup: int = 2,
    min_rounds: int = 20,
    max_rounds: int = 2000,
    max_seconds: float = 20.0,
    precision: float = 0.005,
    graph: str = "off",
    prune: float | None = None,
    duty: float = DUTY,
    clock_floor: float = clock_watch.CLOCK_FLOOR,
    watch: clock_watch.ClockWatch | None = None,
    batch: int | str = "auto",
) -> dict[str, Any]:
    """Fill each live variant's samples_ms: warm-up, then balanced interleaved rounds until precise enough.

    `live`: the variants whose outputs passed the check against the baseline (Runner.check), and a
    reference (v.ref) if asked. With graph="on" (or "auto" and a kernel under GRAPH_BELOW_MS), a
    round is a replay of one graph holding every variant's runs (no CPU launch path in it). `batch`:
    launches a sample ("auto": batched below BATCH_BELOW_MS; batch_size). With
    `prune` (sweeps), from PRUNE_AFTER rounds a variant is dropped once the CI of its paired ratio
    to the current leader lies wholly above 1 + prune (from PRUNE_EARLY rounds, once each of its
    ratios is 25 % above): several times slower configs stop costing rounds at once.
    """
    import torch

    if not live:
        return {"rounds": 0, "seconds": 0.0, "method": ""}
    batch_size(1.0, batch)  # a bad value fails here, before any GPU time
    everyone = list(live)
    work, written, pristine = workbench.work, workbench.written, workbench.pristine
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    go = {v.name: launcher(v, work, workbench.launch) for v in live}
    k_launches = 1  # launches between a sample's events (set after the warm-up)
    spin = 0  # cycles of the spin kernel before a batch's start event (batched events)
    sleep = getattr(torch.cuda, "_sleep", None)

    def run_one(v: Variant, events=None, hold: int = 0) -> None:
        """One sample (or the lead-in when events is None): restore, flush, [untimed launch], K launches.
        `hold`: spin cycles before the start event of an unbatched sample (the warm-up's)."""
        inputs.restore(work, pristine, written)
        flush.zero_()
        launch = go[v.name]
        if k_launches > 1:
            launch()  # untimed: the flush's dirty L2 lines written back, this variant's code and data warm
            if spin and sleep is not None:
                sleep(spin)  # the GPU waits here while the CPU queues the batch: no CPU gaps inside it
        elif hold and sleep is not None:
            sleep(hold)
        if events:
            events[0].record()
        for _ in range(k_launches):
            launch()
        if events:
            events[1].record()

    watch = watch if watch is not None else clock_watch.ClockWatch.for_current_device()
    watch.start()
    warm: dict[str, list[float]] = {v.name: [] for v in live}
    # the warm-up's samples decide batching. After the first round each is held by a spin so that the
    # CPU's launch (tens of us from Python on a loaded host) is queued before its start event, not timed
    # as the kernel's: the first round's samples, unheld, time how long the CPU takes for one
    cpu_s: list[float] = []
    for r in range(max(1, warmup)):
        pending, round_start = [], time.perf_counter()
        hold = spin_cycles(timing.median(cpu_s), 1) if r and cpu_s and sleep is not None else 0
        for i in schedule(len(live), r, 1):
            pending.append((live[i], _events()))
            t = time.perf_counter()
            run_one(live[i], pending[-1][1], hold)
            cpu_s.append(time.perf_counter() - t)
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, (start, end) in pending:
            warm[v.name].append(start.elapsed_time(end))
    kernels = [v for v in live if v.ref is None] or live
    fastest = min(min(warm[v.name]) for v in kernels)  # a cold first sample (clocks, caches) must not decide
    use_graph = graph == "on" or (graph == "auto" and fastest < GRAPH_BELOW_MS)
    k_launches = batch_size(fastest, batch)
    runs = runs_per_round(fastest * k_launches, use_graph)
    if k_launches > 1 and not use_graph and sleep is not None:
        spin = spin_cycles(_cpu_launch_seconds(go, torch), k_launches)

    graphs: dict[tuple[tuple[str, ...], int], tuple] = {}
    method = method_line(use_graph, runs, k_launches, len(live), duty, fastest, spin)
    if use_graph:
        try:
            graphs[(_key(live), 0)] = _capture(live, runs, run_one, 0)
        except Exception as e:  # noqa: BLE001 - e.g. timing events in graphs unsupported (older ROCm, torch)
            use_graph = False
            torch.cuda.synchronize()
            runs = runs_per_round(fastest * k_launches, False)
            if k_launches > 1 and sleep is not None:
                spin = spin_cycles(_cpu_launch_seconds(go, torch), k_launches)
            first = str(e).strip().splitlines()[0][:120] if str(e).strip() else repr(e)
            method = method_line(False, runs, k_launches, len(live), duty, fastest, spin)
            method += f" (CUDA graph capture failed: {first})"

    slots_pool = [_events() for _ in range(len(live) * runs)]
    raw: list[float] = []
    round_clocks: list[float | None] = []
    start_time = time.perf_counter()
    rounds = 0
    while rounds < max_rounds:
        if use_graph:
            slot = (_key(live), rounds % period(len(live)))
            if slot not in graphs:  # first use of this rotation (or a sweep dropped variants): capture it
                graphs[slot] = _capture(live, runs, run_one, rounds)
            g, slots = graphs[slot]
            t0 = time.perf_counter()
            g.replay()
            pending = [(live[i], ev) for i, ev in slots]
        else:
            t0 = time.perf_counter()
            seq = schedule(len(live), rounds, runs)
            run_one(live[lead_in(seq)])  # the lead-in: untimed
            pending = []
            for j, i in enumerate(seq):
                run_one(live[i], slots_pool[j])
                pending.append((live[i], slots_pool[j]))
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        round_clocks.append(watch.clock_between(t0, t1))
        _rest(t1 - t0, duty)
        times: dict[str, list[float]] = {v.name: [] for v in live}
        for v, (start, end) in pending:
            times[v.name].append(start.elapsed_time(end))
        for v in live:
            v.samples_ms.append(sum(times[v.name]) / len(times[v.name]) / k_launches)
            if len(raw) < RAW_KEPT:
                raw.extend(times[v.name])  # whole batches: the timer's tick is on these
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
    return {
        "rounds": rounds - len(slow),
        "rounds_run": rounds,
        "seconds": end_time - start_time,
        "method": method,
        "runs_per_round": runs,
        "batch": k_launches,
        "tick_ms": timing.timer_tick(raw),
        "clocks": asdict(report),
    }


def _cpu_launch_seconds(go: dict, torch) -> float:
    """The CPU's time to queue one launch: the slowest variant's median of 5 (launched for real)."""
    medians = []
    for launch in go.values():
        per = []
        for _ in range(5):
            t = time.perf_counter()
            launch()
            per.append(time.perf_counter() - t)
        medians.append(sorted(per)[len(per) // 2])
    torch.cuda.synchronize()
    return max(medians)


def _key(live: list[Variant]) -> tuple[str, ...]:
    return tuple(v.name for v in live)


def _capture(live: list[Variant], runs: int, run_one, round_index: int) -> tuple:
    """The graph of one round's order (schedule of round_index): an untimed lead-in, then every
    variant's runs with their events; replayed once (the upload: not a sample). (graph, slots)."""
    import torch

    seq = schedule(len(live), round_index, runs)
    slots = [(i, _events(external=True)) for i in seq]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run_one(live[lead_in(seq)])
        for i, ev in slots:
            run_one(live[i], ev)
    g.replay()
    torch.cuda.synchronize()
    return g, slots


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
                v.dropped = (
                    f"dropped after {rounds} rounds: {c.delta_percent:+.1f}% "
                    f"[{(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}] against {leader.name}"
                )
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
