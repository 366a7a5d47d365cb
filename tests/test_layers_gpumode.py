"""The part of the kernel-generator setup a real GPU run uses too (standin/generators.py), on the CPU:
Helion's environment and Inductor's settings (in-process, caches off) applied and undone, a variable the
user set kept; and capture/inductor.py's gpu-mode pieces (launches found by function handle, the config
Inductor launched marked) on stand-ins for Inductor's objects. A real run is tests/gpu/test_layers_gpu.py."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from irscope.capture.inductor import InductorHooks
from irscope.capture.recorder import Recorder
from irscope.kernel.targets import parse_target
from irscope.standin import generators

needs_torch = pytest.mark.torch


def test_helion_environment_set_and_undone_and_the_users_kept(monkeypatch):
    monkeypatch.setenv("HELION_AUTOTUNE_PRECOMPILE", "1")  # the user's: kept
    for var in ("HELION_AUTOTUNE_BENCHMARK_SUBPROCESS", "HELION_CACHE_DIR", "HELION_AUTOTUNE_PROGRESS_BAR"):
        monkeypatch.delenv(var, raising=False)
    with generators.in_process():
        assert os.environ["HELION_AUTOTUNE_BENCHMARK_SUBPROCESS"] == "0"
        assert os.environ["HELION_AUTOTUNE_PRECOMPILE"] == "1"
        cache = Path(os.environ["HELION_CACHE_DIR"])
        assert cache.parent.is_dir() and cache.parent.name.startswith("irscope-layers-")
    assert "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS" not in os.environ and "HELION_CACHE_DIR" not in os.environ
    assert os.environ["HELION_AUTOTUNE_PRECOMPILE"] == "1"
    assert not cache.parent.exists()


@needs_torch
def test_inductor_settings_applied_on_first_torch_compile_and_undone():
    import torch

    original = torch.compile
    entered = []

    @contextlib.contextmanager
    def observer():
        entered.append("in")
        yield
        entered.append("out")

    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    before = {n: getattr(inductor_config, n) for n in generators.INDUCTOR_CONFIG if hasattr(inductor_config, n)}
    with generators.observe_inductor(observer), generators.in_process():
        assert torch.compile is not original and not entered  # nothing set up before torch.compile
        compiled = torch.compile(lambda x: x + 1)  # compiles nothing yet (lazy)
        assert callable(compiled) and entered == ["in"]
        assert inductor_config.compile_threads == 1
        assert inductor_config.fx_graph_cache is False and inductor_config.autotune_local_cache is False
        assert inductor_config.use_static_triton_launcher is False
        assert functorch_config.enable_autograd_cache is False
        assert not [n for n in generators.missing if n in generators.ESSENTIAL]
        torch.compile(lambda x: x)  # set up once
        assert entered == ["in"]
    assert entered == ["in", "out"] and torch.compile is original
    assert {n: getattr(inductor_config, n) for n in before} == before


@needs_torch
def test_gpu_mode_hooks_wrap_inductors_run_and_put_it_back():
    from torch._inductor.runtime import triton_heuristics as th

    run, precompile = th.CachingAutotuner.run, th.CachingAutotuner._precompile_config
    hooks = InductorHooks(Recorder(parse_target("cuda:90"), False, []))
    with hooks.installed():
        assert not hooks.on_standin  # no stand-in driver here: a real run's hooks
        assert th.CachingAutotuner.run is not run and th.CachingAutotuner._precompile_config is not precompile
    assert th.CachingAutotuner.run is run and th.CachingAutotuner._precompile_config is precompile


def test_a_real_drivers_launch_is_found_by_its_function_handle_and_the_launched_config_marked():
    hooks = InductorHooks(Recorder(parse_target("cuda:90"), False, []))
    caps = [SimpleNamespace(winner=None, name="k") for _ in range(2)]
    binaries = [SimpleNamespace(function=None), SimpleNamespace(function=None)]
    hooks._unbound = list(zip(binaries, caps))
    binaries[1].function = 0xBEEF  # its handles loaded (make_launcher)
    assert hooks._capture_of(SimpleNamespace(), 0xBEEF) is caps[1]
    assert hooks._capture_of(SimpleNamespace(), 0xBEEF) is caps[1]  # then from the map
    assert hooks._capture_of(SimpleNamespace(), 0xCAFE) is None
    cfgs = [SimpleNamespace(kwargs={"XBLOCK": x}, num_warps=4, num_stages=1, num_ctas=1) for x in (64, 128)]
    tuner = SimpleNamespace(launchers=[SimpleNamespace(config=cfgs[1])])
    hooks._by_tuner[id(tuner)] = (tuner, list(zip(cfgs, caps)))
    hooks._mark_launched(tuner)
    assert [c.winner for c in caps] == [False, True]
