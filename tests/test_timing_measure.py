"""measure.py's loop on the CPU, with a stand-in torch.cuda: a virtual GPU clock that each flush and
launch advances, events that read it, and graphs that record and replay those steps. What it checks is
the loop's bookkeeping (one sample a round per variant, the mean of its runs; the balanced order;
rounds dropped for a low clock, in pairs; a reference never leads nor is dropped), not GPU timing.
"""

from __future__ import annotations

import contextlib
import random
import sys
import types

import pytest

from irscope.timing import measure as measure_mod
from irscope.timing.launch import Launch
from irscope.timing.variant import Variant


class VirtualGPU:
    def __init__(self, tick: float = 0.0):
        self.now = 0.0              # ms
        self.tick = tick            # events read the clock in these steps (ms)
        self.capturing: list | None = None
        self.trace: list[str] = []  # names of the variants launched, in order

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
            gpu.do(lambda: setattr(gpu, "now", gpu.now + 0.085))

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
    torch.cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None, CUDAGraph=CUDAGraph, graph=graph)
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


def run(monkeypatch, times: dict[str, float], ref: str | None = None, tick: float = 0.0, jitter: float = 0.0,
        **kwargs):
    gpu = VirtualGPU(tick)
    rng = random.Random(0)
    monkeypatch.setitem(sys.modules, "torch", fake_torch(gpu))
    monkeypatch.setattr(measure_mod, "_rest", lambda busy, duty: None)

    def launcher(v, args, launch):
        def go():
            gpu.trace.append(v.name)
            gpu.now += times[v.name] * (1 + rng.uniform(-jitter, jitter))
        return lambda: gpu.do(go)

    monkeypatch.setattr(measure_mod, "launcher", launcher)
    live = [Variant(name, None, None, ref=("ref" if name == ref else None)) for name in times]
    bench = measure_mod.Workbench({}, {}, set(), Launch({}))
    result = measure_mod.measure(bench, live, **kwargs)
    return result, live, gpu


def test_each_round_gives_each_variant_one_sample(monkeypatch):
    result, live, gpu = run(monkeypatch, {"a": 0.004, "b": 0.004}, min_rounds=24, max_rounds=24,
                            watch=ScriptedWatch())
    assert result["rounds"] == 24 and result["runs_per_round"] == 1
    assert all(len(v.samples_ms) == 24 for v in live)
    assert all(s == pytest.approx(0.004) for v in live for s in v.samples_ms)
    timed = gpu.trace[2 * 2:]  # after the warm-up rounds (two, one run each)
    rounds = [timed[i:i + 3] for i in range(0, 12, 3)]  # the lead-in, then one run of each
    assert rounds[0] == ["a", "a", "b"] and rounds[1] == ["b", "b", "a"], "mirrored order after a lead-in"
    assert result["clocks"]["sm_mhz"] == (1980.0, 1980.0, 1980.0) and result["clocks"]["dropped_rounds"] == 0
    assert result["method"].startswith("CUDA events around each run; 1 run of each variant")


def test_rounds_run_at_a_low_clock_are_dropped_in_pairs(monkeypatch):
    result, live, _ = run(monkeypatch, {"a": 0.2, "b": 0.2}, min_rounds=20, max_rounds=20,
                          watch=ScriptedWatch(dips={7}))
    assert result["rounds_run"] == 20 and result["rounds"] == 18
    assert all(len(v.samples_ms) == 18 for v in live)
    assert result["clocks"]["dropped_rounds"] == 2 and result["clocks"]["sm_mhz"][0] == 1500.0


def test_graph_rounds_replay_every_variant_in_one_graph(monkeypatch):
    result, live, gpu = run(monkeypatch, {"a": 0.004, "b": 0.006}, graph="on", min_rounds=20, max_rounds=20,
                            watch=ScriptedWatch())
    assert result["method"].startswith("CUDA graphs: one replay a round holds every variant")
    assert "graph mode is biased for short kernels" in result["method"]
    assert result["runs_per_round"] == 10
    assert all(len(v.samples_ms) == 20 for v in live)
    assert live[0].samples_ms[0] == pytest.approx(0.004) and live[1].samples_ms[0] == pytest.approx(0.006)
    # warm-up (2 rounds x 2), two captures replayed once each (21 runs each), then 20 replays
    assert len(gpu.trace) == 4 + 2 * 21 + 20 * 21


def test_a_reference_is_timed_but_never_leads_or_is_dropped(monkeypatch):
    times = {"fast": 0.2, "slow": 0.6, "torch": 0.1}
    result, live, _ = run(monkeypatch, times, ref="torch", prune=0.01, min_rounds=12, max_rounds=40,
                          watch=ScriptedWatch())
    by = {v.name: v for v in live}
    assert by["slow"].dropped.startswith("dropped after 2 rounds") and by["slow"].dropped.endswith("against fast")
    assert not by["torch"].dropped and len(by["torch"].samples_ms) == result["rounds"]
    assert len(by["slow"].samples_ms) == 2


def test_the_timer_tick_is_found_in_the_run_times(monkeypatch):
    result, live, _ = run(monkeypatch, {"a": 0.0036, "b": 0.0036}, tick=32e-6, jitter=0.03, min_rounds=8,
                          max_rounds=8, watch=ScriptedWatch())
    assert result["tick_ms"] == pytest.approx(32e-6, rel=1e-6)
    assert len({round(s, 9) for s in live[0].samples_ms}) > 1, "means of ticks, not stuck to one"
    result, _, _ = run(monkeypatch, {"a": 0.0036, "b": 0.0036}, jitter=0.03, min_rounds=8, max_rounds=8,
                       watch=ScriptedWatch())
    assert result["tick_ms"] == 0.0, "a clock without ticks: no tick claimed"
