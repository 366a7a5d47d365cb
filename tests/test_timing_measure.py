"""measure.py's loop on the CPU, with a stand-in torch.cuda: a virtual GPU clock that each flush and
launch advances, events that read it, and graphs that record and replay those steps. What it checks is
the loop's bookkeeping (one sample a round per variant, the mean of its runs; the balanced order;
rounds dropped for a low clock, in pairs; a reference never leads nor is dropped), not GPU timing.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import sys
import types
from collections import Counter

import pytest

from irscope.timing import measure as measure_mod
from irscope.timing.launch import Launch
from irscope.timing.variant import Variant


class VirtualGPU:
    def __init__(self, tick: float = 0.0):
        self.now = 0.0  # ms
        self.tick = tick  # events read the clock in these steps (ms)
        self.capturing: list | None = None
        self.trace: list[str] = []  # names of the variants launched, in order
        self.spins: list[int] = []  # cycles of each spin kernel run (torch.cuda._sleep)
        self.launch_gap = 0.0  # ms the GPU waits for the CPU's launch, unless a spin held it since the flush
        self.held = False

    def do(self, step):
        if self.capturing is not None:
            self.capturing.append(step)
        else:
            step()


def fake_torch(gpu: VirtualGPU) -> types.ModuleType:
    torch = types.ModuleType("torch")

    class Event:
        def __init__(self, enable_timing=True, external=False):
            self.t = None

        def record(self):
            gpu.do(lambda: setattr(self, "t", gpu.now - (gpu.now % gpu.tick if gpu.tick else 0.0)))

        def elapsed_time(self, end):
            return end.t - self.t

    class Flush:
        def zero_(self):
            gpu.do(lambda: (setattr(gpu, "now", gpu.now + 0.085), setattr(gpu, "held", False)))

    class CUDAGraph:
        def __init__(self):
            self.steps = []

        def replay(self):
            for step in self.steps:
                step()

    @contextlib.contextmanager
    def graph(g):
        gpu.capturing = g.steps
        try:
            yield
        finally:
            gpu.capturing = None

    torch.Tensor = type("Tensor", (), {})
    torch.int8 = "int8"
    torch.empty = lambda *a, **k: Flush()
    torch.cuda = types.SimpleNamespace(
        Event=Event,
        synchronize=lambda: None,
        CUDAGraph=CUDAGraph,
        graph=graph,
        _sleep=lambda cycles: gpu.do(lambda: (gpu.spins.append(cycles), setattr(gpu, "held", True))),
    )
    return torch


class ScriptedWatch:
    """Clocks by round: 1980 MHz, except the rounds in `dips`."""

    def __init__(self, dips=()):
        self.dips, self.round, self.source, self.readings = set(dips), 0, "NVML", []
        self.read = object()

    watching = True

    def start(self):
        pass

    def stop(self):
        pass

    def clock_between(self, t0, t1):
        self.round += 1
        return 1500.0 if self.round - 1 in self.dips else 1980.0


def run(
    monkeypatch,
    times: dict[str, float],
    ref: str | None = None,
    tick: float = 0.0,
    jitter: float = 0.0,
    launch_gap: float = 0.0,
    **kwargs,
):
    gpu = VirtualGPU(tick)
    gpu.launch_gap = launch_gap
    rng = random.Random(0)
    monkeypatch.setitem(sys.modules, "torch", fake_torch(gpu))
    monkeypatch.setattr(measure_mod, "_rest", lambda busy, duty: None)

    def launcher(v, args, launch):
        def go():
            gpu.trace.append(v.name)
            gpu.now += (0.0 if gpu.held else gpu.launch_gap) + times[v.name] * (1 + rng.uniform(-jitter, jitter))

        return lambda: gpu.do(go)

    monkeypatch.setattr(measure_mod, "launcher", launcher)
    live = [Variant(name, None, None, ref=("ref" if name == ref else None)) for name in times]
    bench = measure_mod.Workbench({}, {}, set(), Launch({}))
    result = measure_mod.measure(bench, live, **kwargs)
    return result, live, gpu


def test_each_round_gives_each_variant_one_sample(monkeypatch):
    result, live, gpu = run(
        monkeypatch, {"a": 0.004, "b": 0.004}, min_rounds=24, max_rounds=24, watch=ScriptedWatch(), batch=1
    )
    assert result["rounds"] == 24 and result["runs_per_round"] == 1 and result["batch"] == 1
    assert all(len(v.samples_ms) == 24 for v in live)
    assert all(s == pytest.approx(0.004) for v in live for s in v.samples_ms)
    timed = gpu.trace[2 * 2 :]  # after the warm-up rounds (two, one run each)
    rounds = [timed[i : i + 3] for i in range(0, 12, 3)]  # the lead-in, then one run of each
    assert rounds[0] == ["b", "a", "b"] and rounds[1] == ["a", "b", "a"], "mirrored order after a lead-in"
    assert rounds[2] == ["a", "b", "a"] and rounds[3] == ["b", "a", "b"], "rotated every two rounds"
    assert result["clocks"]["sm_mhz"] == (1980.0, 1980.0, 1980.0) and result["clocks"]["dropped_rounds"] == 0
    assert result["method"].startswith("CUDA events around each run; 1 run of each variant")
    assert "one launch per sample" in result["method"]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("runs", [1, 2, 4, 10])
def test_the_schedule_is_balanced_over_its_period(n, runs):
    """Over every rotation and its mirror: each variant first equally often, each follows itself equally
    often (the lead-in counted: the round's last variant), every ordered pair of cyclic neighbours occurs
    as often as its reverse, and within each mirrored pair of rounds every variant's positions add up
    alike (a linear drift inside a round cancels)."""
    firsts, pairs = Counter(), Counter()
    for r in range(measure_mod.period(n)):
        seq = measure_mod.schedule(n, r, runs)
        assert sorted(seq) == sorted(list(range(n)) * runs)
        firsts[seq[0]] += 1
        full = [measure_mod.lead_in(seq), *seq]
        pairs.update(itertools.pairwise(full))
        if r % 2:
            prev = measure_mod.schedule(n, r - 1, runs)
            sums = {sum(p for p, x in enumerate(prev + seq) if x == v) for v in range(n)}
            assert len(sums) == 1, (prev, seq)
    assert set(firsts.values()) == {2} and len(firsts) == n
    assert len({pairs[(i, i)] for i in range(n)}) == 1
    assert all(pairs[(i, j)] == pairs[(j, i)] for i, j in pairs)
    if n <= 3 and runs % 2 == 0 or n == 2:
        assert len(set(pairs.values())) == 1, pairs


def replays(trace: list[str], size: int) -> list[list[str]]:
    return [trace[i : i + size] for i in range(0, len(trace), size)]


def test_graph_replays_rotate_which_variant_is_first(monkeypatch):
    """The former graphs, schedule of rounds 0 and 1 with an even number of runs, were one palindrome
    twice: the same variant first in every replay, after a lead-in run of itself."""
    result, _, gpu = run(
        monkeypatch, {"a": 0.004, "b": 0.004}, graph="on", min_rounds=40, max_rounds=40, watch=ScriptedWatch(), batch=1
    )
    size = 1 + 2 * result["runs_per_round"]
    timed = replays(gpu.trace[4:], size)[-16:]  # the last 16 replays: past every capture's upload
    assert all(len(r) == size for r in timed)
    firsts = Counter(r[1] for r in timed)
    assert firsts["a"] == firsts["b"] == 8, firsts
    after_itself = Counter(r[1] for r in timed if r[0] == r[1])
    assert after_itself["a"] == after_itself["b"], after_itself
    assert "4 graphs (every rotation and its mirror)" in result["method"]


def test_short_kernels_are_timed_in_batches(monkeypatch):
    """A 4 us kernel: one sample is an untimed launch, then K launches between one pair of events; the
    sample is the batch's time / K, and the method says so."""
    result, live, gpu = run(monkeypatch, {"a": 0.004, "b": 0.004}, min_rounds=8, max_rounds=8, watch=ScriptedWatch())
    k = result["batch"]
    assert k == math.ceil(measure_mod.BATCH_TARGET_MS / 0.004) == 13
    assert f"{k} launches back to back per sample, L2 warm after the first" in result["method"]
    assert "a spin kernel of about" in result["method"]
    assert all(s == pytest.approx(0.004) for v in live for s in v.samples_ms)
    assert gpu.trace[4:14] == ["a"] * 5 + ["b"] * 5  # the CPU's launch time measured: 5 launches of each
    timed = gpu.trace[14:]
    assert len(timed) == 8 * 3 * (k + 1)  # a lead-in and one sample of each, every one k + 1 launches
    warm, spins = gpu.spins[:2], gpu.spins[2:]  # the warm-up's second round is held (one spin a variant)
    assert len(warm) == 2 and all(c >= 20e-6 * measure_mod.SPIN_HZ for c in warm)
    assert len(spins) == 8 * 3 and len(set(spins)) == 1 and spins[0] >= 20e-6 * measure_mod.SPIN_HZ
    first = replays(timed, k + 1)[:3]
    assert first == [["b"] * (k + 1), ["a"] * (k + 1), ["b"] * (k + 1)]
    assert measure_mod.batch_size(0.2) == 1 and measure_mod.batch_size(0.0001) == measure_mod.MAX_BATCH
    assert measure_mod.batch_size(0.004, 1) == 1 and measure_mod.batch_size(0.2, 8) == 8
    with pytest.raises(ValueError):
        measure_mod.batch_size(0.004, "many")


def test_the_cpus_launch_time_does_not_make_a_short_kernel_look_long(monkeypatch):
    """A 4 us kernel whose launch takes the CPU 30 us (Python, a loaded host): timed around one launch, the
    GPU waits for the CPU inside the events and the sample reads 34 us, over BATCH_BELOW_MS, so it was
    timed unbatched (seen on the H200). The warm-up's held round measures the kernel, and it is batched."""
    result, live, gpu = run(
        monkeypatch, {"a": 0.004, "b": 0.004}, launch_gap=0.03, min_rounds=8, max_rounds=8, watch=ScriptedWatch()
    )
    assert result["batch"] == 13
    assert all(s == pytest.approx(0.004) for v in live for s in v.samples_ms)
    unheld, _, _ = run(
        monkeypatch,
        {"a": 0.004, "b": 0.004},
        launch_gap=0.03,
        warmup=1,
        min_rounds=8,
        max_rounds=8,
        watch=ScriptedWatch(),
    )
    assert unheld["batch"] == 1  # one warm-up round, none held: what every warm-up was before


def test_short_kernels_in_graphs_are_batched_too(monkeypatch):
    result, live, gpu = run(
        monkeypatch, {"a": 0.004, "b": 0.006}, graph="on", min_rounds=8, max_rounds=8, watch=ScriptedWatch()
    )
    k = result["batch"]
    assert k == 13 and result["runs_per_round"] == 2
    assert result["method"].startswith("CUDA graphs: one replay a round holds every variant, 2 batches each")
    assert "launches back to back per sample" in result["method"] and "biased" not in result["method"]
    assert len(gpu.spins) == 2 and "spin" not in result["method"], "no CPU inside a graph: the warm-up's spins only"
    assert live[0].samples_ms[0] == pytest.approx(0.004) and live[1].samples_ms[0] == pytest.approx(0.006)


def test_a_batched_tick_is_the_timer_tick_on_whole_batches(monkeypatch):
    result, _, _ = run(
        monkeypatch,
        {"a": 0.0036, "b": 0.0036},
        tick=32e-6,
        jitter=0.03,
        min_rounds=8,
        max_rounds=8,
        watch=ScriptedWatch(),
    )
    assert result["batch"] > 1 and result["tick_ms"] == pytest.approx(32e-6, rel=1e-6)


def test_rounds_run_at_a_low_clock_are_dropped_in_pairs(monkeypatch):
    result, live, _ = run(
        monkeypatch, {"a": 0.2, "b": 0.2}, min_rounds=20, max_rounds=20, watch=ScriptedWatch(dips={7})
    )
    assert result["rounds_run"] == 20 and result["rounds"] == 18
    assert all(len(v.samples_ms) == 18 for v in live)
    assert result["clocks"]["dropped_rounds"] == 2 and result["clocks"]["sm_mhz"][0] == 1500.0


def test_graph_rounds_replay_every_variant_in_one_graph(monkeypatch):
    result, live, gpu = run(
        monkeypatch, {"a": 0.004, "b": 0.006}, graph="on", min_rounds=20, max_rounds=20, watch=ScriptedWatch(), batch=1
    )
    assert result["method"].startswith("CUDA graphs: one replay a round holds every variant")
    assert "graph mode is biased for short kernels" in result["method"]
    assert result["runs_per_round"] == 10
    assert all(len(v.samples_ms) == 20 for v in live)
    assert live[0].samples_ms[0] == pytest.approx(0.004) and live[1].samples_ms[0] == pytest.approx(0.006)
    # warm-up (2 rounds x 2), four graphs captured as first needed and replayed once each (21 runs each),
    # then 20 replays
    assert len(gpu.trace) == 4 + 4 * 21 + 20 * 21


def test_a_reference_is_timed_but_never_leads_or_is_dropped(monkeypatch):
    times = {"fast": 0.2, "slow": 0.6, "torch": 0.1}
    result, live, _ = run(
        monkeypatch, times, ref="torch", prune=0.01, min_rounds=12, max_rounds=40, watch=ScriptedWatch()
    )
    by = {v.name: v for v in live}
    assert by["slow"].dropped.startswith("dropped after 2 rounds") and by["slow"].dropped.endswith("against fast")
    assert not by["torch"].dropped and len(by["torch"].samples_ms) == result["rounds"]
    assert len(by["slow"].samples_ms) == 2


def test_the_timer_tick_is_found_in_the_run_times(monkeypatch):
    result, live, _ = run(
        monkeypatch,
        {"a": 0.0036, "b": 0.0036},
        tick=32e-6,
        jitter=0.03,
        min_rounds=8,
        max_rounds=8,
        watch=ScriptedWatch(),
        batch=1,
    )
    assert result["tick_ms"] == pytest.approx(32e-6, rel=1e-6)
    assert len({round(s, 9) for s in live[0].samples_ms}) > 1, "means of ticks, not stuck to one"
    result, _, _ = run(
        monkeypatch, {"a": 0.0036, "b": 0.0036}, jitter=0.03, min_rounds=8, max_rounds=8, watch=ScriptedWatch(), batch=1
    )
    assert result["tick_ms"] == 0.0, "a clock without ticks: no tick claimed"
