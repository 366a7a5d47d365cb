"""Sweep: compile a grid of settings in parallel, rank them statically, optionally time the survivors.

The flow, a module each:
  configs   (configs.py) the cartesian product of --grid axes; an axis is a backend option
            (anything --set takes) or a constexpr parameter of the kernel
  cache     (here) each config's dump key is computed (cheap: a bind, no compile); configs already
            in irscope's cache are served from it, so an unchanged sweep re-runs near instantly
  compile   (pool.py) the rest in `jobs` worker processes, reused from config to config (Python
            and Triton start once per worker, not per config); a crash (a signal), a hang (past
            `timeout`) or a compile error is that config's result, its worker is replaced, the
            sweep goes on. No SASS unless asked (nvdisasm costs 0.3-0.5 s a config and ranks nothing)
  rank      (rank.py) a table of static stats (registers, spills, shared memory, occupancy, MMA
            and 128-bit load counts); configs that spill or cannot fit are marked
  time      (here, then timing.bench) the survivors: each is handed to the timing process as soon
            as it compiles (torch comes up meanwhile); interleaved, CI, checked against the first
            survivor's outputs, clearly slower configs dropped early; the winner is named with its
            margin
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from irscope.core import dump
from irscope.core.inputs import check_output_dir
from irscope.errors import BadInput
from irscope.sweep import pool
from irscope.sweep.configs import Config
from irscope.sweep.rank import survivors
from irscope.timing import bench
from irscope.timing.launch import Launch
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant

PRUNE_MARGIN = 0.01  # --time: stop timing a config once it is, with 95 % confidence, 1 % behind the leader


@dataclass
class SweepRun:
    """What compile_and_time did: how long the compile phase took, and the timing report (--time)."""

    compile_seconds: float                  # the parallel compile phase, wall clock
    compile_end: float                      # when it ended (epoch seconds), to line it up with the timing process
    timed: bench.BenchReport | None = None  # with --time


def compile_and_time(configs: list[Config], out_dir: Path, jobs: int, timeout: float,
                     progress: Callable[[Config], None], *, use_cache: bool, with_sass: bool,
                     session: TimingSession | None = None, launch: Launch | None = None, max_seconds: float = 20.0,
                     graph: str = "off", duty: float = 0.5) -> SweepRun:
    """Compile every config (cached ones are served from the cache); with a timing session (started by
    the caller as early as it could), each config that compiles, fits and does not spill is handed to
    it at once, then all are timed."""
    check_inputs(out_dir, jobs, timeout)
    variants: dict[int, Variant] = {}
    if session is not None:
        # one warm-up round: each config has run once already (its preflight)
        session.start(launch, max_seconds=max_seconds, prune=PRUNE_MARGIN, warmup=1, graph=graph, duty=duty)

    def done(cfg: Config) -> None:
        progress(cfg)
        if session is not None and survivors([cfg]):
            variants[cfg.index] = Variant(cfg.label, cfg.spec, cfg.settings)
            session.add(variants[cfg.index])

    start = time.perf_counter()
    to_compile = []
    for cfg in configs:
        if use_cache and _from_cache(cfg, out_dir, with_sass):
            done(cfg)
        else:
            to_compile.append(cfg)
    pool.compile_all(to_compile, out_dir, jobs, timeout, done, use_cache=use_cache, with_sass=with_sass,
                     for_launch=session is not None)
    run = SweepRun(time.perf_counter() - start, time.time())
    refuse_if_all_bad(configs)
    if session is not None:
        if not variants:
            raise BadInput("no config survived the static checks (all failed, spilled or did not fit): "
                           "nothing to time")
        run.timed = bench.run([variants[i] for i in sorted(variants)], launch, max_seconds=max_seconds,
                              session=session, compiled=True)
    return run


def _from_cache(cfg: Config, out_dir: Path, with_sass: bool) -> bool:
    """Serve the config from irscope's cache; True when that settled it (a hit, or a spec that cannot bind)."""
    try:
        hit = dump.cached(cfg.spec, cfg.settings, out_dir, with_sass=with_sass)
    except BadInput as e:
        cfg.status, cfg.reason = "bad input", str(e)
        return True
    if hit is None:
        return False
    cfg.status, cfg.folder, cfg.stats = "cached", str(hit.folder), hit.manifest["stats"]
    return True


def check_inputs(out_dir: Path, jobs: int, timeout: float) -> None:
    """What a sweep is told, refused before any worker starts: --timeout, --jobs, a writable -o."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout) \
            or timeout <= 0:
        shown = f"{timeout:g}" if isinstance(timeout, (int, float)) else repr(timeout)
        raise BadInput(f"--timeout {shown}: the seconds one config may compile must be > 0, e.g. --timeout 300")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise BadInput(f"--jobs {jobs!r}: the number of compile processes must be 1 or more")
    check_output_dir(out_dir, "-o")


def refuse_if_all_bad(configs: list[Config]) -> None:
    """Every config refused for one and the same bad input (e.g. a layout pin no config's TTGIR can
    take): that is the user's input, not a result of the grid; exit 2 with the reason."""
    if not configs or any(c.status != "bad input" for c in configs):
        return
    reasons = list(dict.fromkeys(c.reason for c in configs))
    if len(reasons) == 1:
        raise BadInput(f"every config of the sweep was refused: {reasons[0]}")
