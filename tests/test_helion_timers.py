"""Helion's timers on the stand-in GPU (standin/helion_bench.py): compute_repeat, which the examples'
run_example asks first how often to time each function (by timing it through CUDA-graph replays on a GPU),
runs the function once with its launches not computed, and answers the least count; put back after."""

from __future__ import annotations

import sys
import types

from irscope.standin.helion_bench import HelionTimers
from irscope.standin.interpret import in_benchmark


def _module() -> types.ModuleType:
    module = types.ModuleType("helion.autotuner.benchmarking")

    def compute_repeat(
        fn, *, target_ms=100.0, min_repeat=10, max_repeat=1000, estimate_runs=5, default_cudagraph=False
    ):
        for _ in range(estimate_runs + 1):  # as Helion's: a warm-up, then timed runs
            fn()
        return max_repeat

    module.compute_repeat = compute_repeat  # type: ignore[attr-defined]
    module.compute_repeat_generic = compute_repeat  # type: ignore[attr-defined]
    return module


def test_compute_repeat_runs_the_function_once_not_computed_and_answers_the_least_count(monkeypatch):
    module, timers, seen = _module(), HelionTimers(), []
    monkeypatch.setitem(sys.modules, module.__name__, module)  # restore() finds the module it patched there
    original = module.compute_repeat
    timers.patch(module)
    assert module.compute_repeat(lambda: seen.append(in_benchmark()), default_cudagraph=True) == 10
    assert module.compute_repeat_generic(lambda: seen.append(in_benchmark()), min_repeat=3) == 3
    assert seen == [True, True]  # once each, inside benchmarking(): the interpreter computes none of it
    assert not in_benchmark()
    timers.restore()
    assert module.compute_repeat is original
