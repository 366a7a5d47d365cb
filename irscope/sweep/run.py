"""Sweep: compile a grid of settings in parallel, rank them statically, optionally time the survivors.

The flow, a module each:
  configs   (configs.py) the cartesian product of --axis axes (lists and ranges); an axis is a
            backend option (anything --set takes) or a constexpr parameter of the kernel
  search    (search.py) with --search: the strategy proposes configs a generation at a time
            instead, from what compiled and was timed so far
  cache     (here) each config's dump key is computed (cheap: a bind, no compile); configs already
            in irscope's cache are served from it, so an unchanged sweep re-runs near instantly
  compile   the rest: in `jobs` local worker processes (pool.py: reused from config to config; a
            crash, a hang past `timeout` or a compile error is that config's result), or as Ray
            tasks on a cluster's CPUs (ray_engine.py: --cluster ray[:ADDRESS])
  rank      (rank.py) a table of static stats; configs that spill or cannot fit are marked
  reuse     (history.py) with --time, a survivor measured before under the same conditions (kernel
            binary, device, Triton, method) is not timed again: its stored measurement is used
  time      each other survivor is handed to a timer as soon as it compiles: this machine's GPU
            (timers.py, the timing process) or one Ray actor per GPU; batches on different GPUs,
            generations or the database meet through a reference config, and the finalists are
            re-timed together when they came from different batches (timed.py)
  record    every timed config goes into the database; --history lists past sweeps
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope import adapter
from irscope.compile import dump
from irscope.errors import BadInput
from irscope.kernel.inputs import check_output_dir
from irscope.sweep import pool, ray_engine, search
from irscope.sweep.configs import Config
from irscope.sweep.history import History, method_key
from irscope.sweep.rank import survivors
from irscope.sweep.timed import Batch, SweepTiming, combine, conclude
from irscope.sweep.timers import PRUNE_MARGIN

SLOW_COMPILE = 8.0  # a search config compiling this many times the median so far is cut off ...
SEARCH_COMPILE_FLOOR = 20.0  # ... but never under this many seconds

__all__ = [
    "PRUNE_MARGIN",
    "Engine",
    "SweepRun",
    "check_inputs",
    "compile_and_time",
    "refuse_if_all_bad",
    "search_and_time",
]


@dataclass
class SweepRun:
    """What a sweep did: the compile phase's wall time, the timings (--time), the search's log."""

    compile_seconds: float  # the parallel compile phase, wall clock
    compile_end: float  # when it ended (epoch seconds), to line it up with the timing process
    timed: SweepTiming | None = None  # with --time
    search: search.SearchLog | None = None  # with --search
    configs: list[Config] = field(default_factory=list)
    sweep_id: int | None = None  # its row in the database (--time)


@dataclass
class Engine:
    """Where configs compile and are timed, and what a timed sweep remembers."""

    jobs: int = 1
    timeout: float = 300.0
    use_cache: bool = True
    with_sass: bool = False
    cluster: str = "local"  # local | ray
    timers: Any = None  # timers.LocalTimers or ray_engine.Timers (with --time)
    history: History | None = None
    method: dict[str, Any] = field(default_factory=dict)  # what makes measurements comparable besides the binary
    workers: pool.Pool | None = None  # compile workers kept across a search's generations

    def compile(self, configs: list[Config], out_dir: Path, done: Callable[[Config], None]) -> None:
        """Serve from the cache what it holds, compile the rest (pool or Ray tasks)."""
        to_compile = []
        for cfg in configs:
            if self.use_cache and _from_cache(cfg, out_dir, self.with_sass):
                done(cfg)
            else:
                to_compile.append(cfg)
        if self.cluster == "ray":
            ray_engine.compile_all(
                to_compile, out_dir, self.timeout, done, use_cache=self.use_cache, with_sass=self.with_sass
            )
        else:
            pool.compile_all(
                to_compile,
                out_dir,
                self.jobs,
                self.timeout,
                done,
                use_cache=self.use_cache,
                with_sass=self.with_sass,
                for_launch=self.timers is not None,
                pool=self.workers,
            )


class _Timing:
    """One sweep's timing: reuse from the database, feed the timers, conclude, record."""

    def __init__(self, engine: Engine) -> None:
        self.engine, self.timers = engine, engine.timers
        self.device = self.timers.device() if engine.history is not None else None
        self.method = method_key(**engine.method)
        self.reused: dict[str, tuple[float, str, str]] = {}
        self.keys: dict[str, str] = {}
        self.batches: list[Batch] = []
        self.fed = 0

    def offer(self, cfg: Config) -> bool:
        """A survivor: reused when the database holds it, else handed to a timer. True if timed."""
        self.keys[cfg.label] = _db_key(cfg)
        if self.device and self.engine.history is not None:
            stored = self.engine.history.lookup(self.keys[cfg.label], self.device, _triton(), self.method)
            if stored is not None:
                self.reused[cfg.label] = (stored.median_ms, f"reused (sweep #{stored.sweep})", stored.dropped)
                return False
        self.timers.add(cfg)
        self.fed += 1
        return True

    def batch(self) -> list[Batch]:
        got = self.timers.finish()
        self.batches += got
        return got

    def conclude(self, by_label: dict[str, Config]) -> SweepTiming:
        def retime(names: list[str]) -> Batch:
            b = self.timers.retime([by_label[n] for n in names])
            self.batches.append(b)
            return b

        result = conclude(self.batches, self.reused, retime if self.batches else None)
        result.notes = list(getattr(self.timers, "notes", [])) + result.notes
        if self.reused and self.engine.history is not None:  # only the database fills reused
            result.notes.append(
                f"{len(self.reused)} configs reused from the database ({self.engine.history.path}), not timed again"
            )
        return result

    def record(self, run: SweepRun, base: Config, strategy: str) -> None:
        if self.engine.history is None or run.timed is None:
            return
        rows = []
        for b in self.batches:
            for v in b.report.variants:
                if v.summary and v.name in self.keys:
                    rows.append(
                        {
                            "cache_key": self.keys[v.name],
                            "label": v.name,
                            "device": self.device or b.report.device,
                            "triton": _triton(),
                            "method": self.method,
                            "median_ms": v.summary.median,
                            "samples": b.report.samples.get(v.name, []),
                            "status": v.status,
                            "dropped": v.dropped,
                        }
                    )
        w = run.timed.winner
        run.sweep_id = self.engine.history.record(
            {
                "started": time.time(),
                "kernel": base.spec.kernel,
                "file": str(Path(base.spec.file).resolve()),
                "target": base.settings.target.name,
                "device": run.timed.device or self.device,
                "triton": _triton(),
                "strategy": strategy,
                "configs": len(run.configs),
                "timed": len(rows),
                "reused": len(self.reused),
                "winner": w.name if w else None,
                "winner_ms": w.median_ms if w else None,
            },
            rows,
        )


def compile_and_time(
    configs: list[Config],
    out_dir: Path,
    engine: Engine,
    progress: Callable[[Config], None],
) -> SweepRun:
    """Compile every config; with timers, hand each survivor over as it compiles, then time, conclude, record."""
    check_inputs(out_dir, engine.jobs, engine.timeout)
    timing = _Timing(engine) if engine.timers is not None else None
    if timing is not None:
        engine.timers.start()  # the launch now: the timing process makes the inputs while configs compile

    def done(cfg: Config) -> None:
        progress(cfg)
        if timing is not None and survivors([cfg]):
            timing.offer(cfg)

    start = time.perf_counter()
    engine.compile(configs, out_dir, done)
    run = SweepRun(time.perf_counter() - start, time.time(), configs=configs)
    refuse_if_all_bad(configs)
    if timing is not None:
        if not survivors(configs):
            raise BadInput("no config survived the static checks (all failed, spilled or did not fit): nothing to time")
        timing.batch()
        run.timed = timing.conclude({c.label: c for c in configs})
        timing.record(run, configs[0], "grid")
    return run


def search_and_time(  # noqa: PLR0913
    strategy: search.Strategy,
    make: Callable[[int, dict[str, Any]], Config],
    out_dir: Path,
    engine: Engine,
    progress: Callable[[Config], None],
    *,
    trials: int | None,
    time_budget: float | None,
    max_registers: int | None,
    name: str,
) -> SweepRun:
    """--search: generations of proposals compiled in parallel, pruned statically, scored, told."""
    check_inputs(out_dir, engine.jobs, engine.timeout)
    timing = _Timing(engine) if engine.timers is not None else None
    if engine.timers is not None:
        engine.timers.more = True  # a batch a generation: each next timing process starts as one ends
        engine.timers.start()
    log = search.SearchLog(
        name,
        "timed median (estimate across batches)"
        if timing
        else "static rank (not timed): fewest spills, then occupancy, then registers",
    )
    incumbent: list[Config] = []

    compile_seconds: list[float] = []

    def compile_batch(batch: list[Config]) -> None:
        """One generation; a config compiling SLOW_COMPILE times longer than the median so far (at least
        SEARCH_COMPILE_FLOOR s) is cut off as 'timed out' and pruned: in a space of thousands, such a
        config is a spill monster (ptxas on a 256x256 tile over 2 warps), and one of them held a whole
        generation of the H200 search for 100 s of its 240."""
        if engine.workers is not None and compile_seconds:
            engine.workers.timeout = min(
                engine.timeout, max(SEARCH_COMPILE_FLOOR, SLOW_COMPILE * statistics.median(compile_seconds))
            )
        engine.compile(batch, out_dir, progress)
        compile_seconds.extend(c.seconds for c in batch if c.status == "ok" and c.seconds > 0)

    def objective(live: list[Config]) -> dict[int, float]:
        """Time the generation with the incumbent as its reference; estimates on the common scale."""
        assert timing is not None  # search() is given the objective only with a timing
        for cfg in incumbent[:1] + live:
            timing.offer(cfg)  # those in the database are reused, not timed
        timing.batch()
        rows = combine(timing.batches, timing.reused)
        good = {
            c.label: estimate
            for c in incumbent[:1] + live
            if c.label in rows and rows[c.label].status == "ok" and (estimate := rows[c.label].estimate_ms)
        }
        best = min((c for c in incumbent[:1] + live if c.label in good), key=lambda c: good[c.label], default=None)
        incumbent[:] = [best] if best is not None else incumbent
        return {c.index: good[c.label] for c in live if c.label in good}

    start = time.perf_counter()
    engine.workers = pool.Pool(engine.jobs, engine.timeout) if engine.cluster == "local" else None
    try:
        tried = search.search(
            strategy,
            make,
            trials=trials,
            time_budget=time_budget,
            width=max(engine.jobs, 8 if timing else 1),
            compile_batch=compile_batch,
            objective=objective if timing else None,
            max_registers=max_registers,
            log=log,
        )
    finally:
        if engine.workers is not None:
            engine.workers.close()
            engine.workers = None
    run = SweepRun(time.perf_counter() - start, time.time(), search=log, configs=tried)
    refuse_if_all_bad(tried)
    if timing is not None:
        if not timing.batches and not timing.reused:
            raise BadInput("no config survived the static checks (all failed, spilled or did not fit): nothing to time")
        run.timed = timing.conclude({c.label: c for c in tried})
        timing.record(run, tried[0], name)
    return run


def _db_key(cfg: Config) -> str:
    """The config's kernel binary as the database knows it: Triton's own key of the compile (source,
    options, target, backend, Triton, the env it hashes; an IR pin's edited file), from the dump's
    manifest. Not irscope's dump key: that also fingerprints irscope's own code, and a measurement of
    the same binary stays valid across irscope versions."""
    manifest = json.loads((Path(cfg.folder) / "manifest.json").read_text())
    return (manifest.get("metadata") or {}).get("hash") or manifest["key"]


def _triton() -> str:
    return adapter.triton_version()


def _from_cache(cfg: Config, out_dir: Path, with_sass: bool) -> bool:
    """Serve the config from irscope's cache; True when that settled it (a hit, or a spec that cannot bind)."""
    try:
        hit = dump.cached(cfg.spec, cfg.settings, out_dir, with_sass=with_sass)
    except BadInput as e:
        cfg.status, cfg.reason = "bad input", str(e)
        return True
    if hit is None:
        return False
    # an entry this irscope wrote always has its stats (records.Manifest allows a file without)
    cfg.status, cfg.folder, cfg.stats = "cached", str(hit.folder), hit.manifest.get("stats") or {}
    return True


def check_inputs(out_dir: Path, jobs: int, timeout: float) -> None:
    """What a sweep is told, refused before any worker starts: --timeout, --jobs, a writable -o."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout) or timeout <= 0:
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
