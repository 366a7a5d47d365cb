"""`irscope sweep`'s work, apart from the command line: the checks of its options, the engine's wiring
(compile pool or Ray, timers, history), the run and the ranking. cli/sweep.py parses into a Request and
SweepOptions, calls prepare and run, and hands the Outcome to views/sweep.py.

    prepare   SweepOptions + Request -> Prepared: every check made before anything compiles, in the
              order a user meets them (an unknown strategy before the kernel loads), the engine built
    run       Prepared -> Outcome: the grid compiled (or the space searched) and timed, ranked; the
              winners written as a recipe (--write-recipe)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope import jobs
from irscope.errors import BadInput
from irscope.sweep import configs as sweep_configs
from irscope.sweep import history as sweep_history
from irscope.sweep import rank, ray_engine, search
from irscope.sweep import run as sweep_job
from irscope.sweep.timers import LocalTimers
from irscope.timing import reference
from irscope.timing.plan import bench_variants


@dataclass(frozen=True)
class SweepOptions:
    """What `irscope sweep` was asked, beyond the Request (each field is the flag of that name; cli/sweep.py
    names its click parameters as these fields and builds this by keyword)."""

    out_dir: Path
    use_cache: bool = True
    axes: tuple[str, ...] = ()  # --axis (repeatable)
    jobs: int | None = None  # --jobs (None: the cores, or the cluster's CPUs)
    timeout: float = 300.0
    sort_key: str = "config"  # --sort
    cluster: str = "local"
    strategy: str | None = None  # --search
    trials: int | None = None
    time_budget: float | None = None
    seed: int = 0
    max_registers: int | None = None
    do_time: bool = False  # --time
    launch_args: str | None = None  # --args
    launch_grid: str | None = None  # --grid (the launch grid, as bench's)
    old_launch_grid: str | None = None  # --launch-grid: refused, the launch grid is --grid now
    max_seconds: float = 20.0
    graph: str = "off"
    duty: Any = None
    db_path: Path | None = None  # --db
    no_db: bool = False
    with_sass: bool = False  # --sass
    write_recipe: Path | None = None
    top: int = 1
    ref_text: str | None = None  # --ref


@dataclass
class Prepared:
    """A sweep checked and wired, ready to run."""

    opts: SweepOptions
    base: jobs.Job
    axes: list
    total: int  # configs the progress counts
    strategy: str | None
    engine: sweep_job.Engine
    timers: Any = None
    notes: list[str] = field(default_factory=list)  # what the sweep does differently from what was asked


@dataclass
class Outcome:
    """What a sweep did: every config, ranked, and what was timed."""

    base: jobs.Job
    configs: list
    ordered: list
    result: Any
    timed: Any


_AXIS_FORM = re.compile(r"^\s*[A-Za-z_]\w*\s*=(?!=)")  # KEY=..., the config axes' form (a grid has no "=")


def check_flags(opts: SweepOptions) -> None:
    """One meaning per flag: --grid is the launch grid (as in bench and profile), the config axes are --axis.
    The old spellings (axes given to --grid, --launch-grid) are refused, naming the new flag."""
    if opts.old_launch_grid is not None:
        raise BadInput(f"--launch-grid is now --grid (the launch grid, as in bench): --grid {opts.old_launch_grid!r}")
    if opts.launch_grid is not None and _AXIS_FORM.match(opts.launch_grid):
        raise BadInput(
            f"--grid {opts.launch_grid}: --grid is the launch grid now (as in bench); a config axis is "
            f"--axis {opts.launch_grid}"
        )
    if opts.launch_grid is not None and not opts.do_time:
        raise BadInput(f"--grid {opts.launch_grid!r}: the launch grid is used with --time; add --time --args ...")


def check_options(opts: SweepOptions, history: bool) -> None:
    """The flags' checks that need no kernel: one meaning per flag (check_flags); --db is used with --time
    or --history, and not with --no-db."""
    check_flags(opts)
    if opts.db_path is not None and not (opts.do_time or history):
        raise BadInput(
            "--db: the measurements database is used with --time (to reuse and record timings) or "
            "--history (to list them); add one of them, or leave out --db"
        )
    if opts.db_path is not None and opts.no_db:
        raise BadInput("--db and --no-db: give one of them")


def history(request: jobs.Request, db_path: Path | None) -> tuple[list, Path]:
    """--history: the past timed sweeps of the file's kernel(s) (or those named), and the database."""
    db = sweep_history.History(db_path)
    kernels = list(request.kernels) or None
    return db.sweeps(kernels, str(Path(request.file).resolve()) if not kernels else None), db.path


def prepare(request: jobs.Request, opts: SweepOptions, start_session: Callable[[], Any]) -> Prepared:
    """Every check of the sweep's options, then the engine; `start_session` starts the local timing
    process (called early, so the GPU comes up while irscope compiles)."""
    engine_name, address = ray_engine.parse_cluster(opts.cluster)
    search.check_search(opts.strategy, opts.trials, opts.time_budget, 0)  # an unknown strategy: before anything loads
    session = start_session() if opts.do_time and engine_name == "local" else None
    base = jobs.resolve_one(request, "sweep explores")
    axes_typed = sweep_configs.parse_axes(list(opts.axes), base)
    size = sweep_configs.space_size(axes_typed)
    search.check_search(opts.strategy, opts.trials, opts.time_budget, size)
    n_jobs = opts.jobs or os.cpu_count() or 1
    sweep_job.check_inputs(opts.out_dir, n_jobs, opts.timeout)
    if opts.write_recipe is not None:
        rank.check_recipe_path(opts.write_recipe)
    if opts.sort_key not in rank.COLUMNS and opts.sort_key != "config":
        raise BadInput(f"--sort {opts.sort_key!r}: sort by one of config, {', '.join(rank.COLUMNS)}")
    if opts.strategy is None and size > sweep_configs.MAX_GRID:
        raise BadInput(
            f"--axis: {size} configs is more than a sweep enumerates ({sweep_configs.MAX_GRID}); "
            "search the space instead: --search random|optuna --trials N"
        )
    launch = _launch(request, opts)
    ref = None
    if opts.ref_text is not None:
        if not opts.do_time:
            raise BadInput("--ref: a reference is timed with --time (give --time --args ... --grid ...)")
        ref = reference.parse(opts.ref_text, launch)
    db = sweep_history.History(opts.db_path) if opts.do_time and not opts.no_db else None
    resources = ray_engine.connect(address, need_gpu=opts.do_time) if engine_name == "ray" else {}
    measure = {
        "max_seconds": opts.max_seconds,
        "prune": sweep_job.PRUNE_MARGIN,
        "graph": opts.graph,
        "duty": opts.duty,
        "ref": ref,
    }
    timers: ray_engine.Timers | LocalTimers | None = None
    if opts.do_time and engine_name == "ray":
        timers = ray_engine.Timers(launch, measure)
    elif opts.do_time:
        assert session is not None  # started above for a local timing
        timers = LocalTimers(session, launch, measure)
    if engine_name == "ray":
        n_jobs = opts.jobs or int(resources.get("CPU", 1))
    engine = sweep_job.Engine(
        n_jobs, opts.timeout, opts.use_cache, opts.with_sass, engine_name, timers, db, {"launch": launch, **measure}
    )
    strategy, notes = opts.strategy, []
    if strategy is not None:
        strategy, degraded = search.available(strategy)
        if degraded:
            notes.append(degraded)
    return Prepared(opts, base, axes_typed, opts.trials or size, strategy, engine, timers, notes)


def _launch(request: jobs.Request, opts: SweepOptions):
    """--time: the launch (arguments and grid, as bench's) every config is timed with."""
    if not opts.do_time:
        return None
    if not opts.launch_args and not request.is_spec_file:
        raise BadInput('--time needs launch arguments: --args "a=randn(M, K, bf16), ..." and --grid')
    if opts.launch_args and not opts.launch_grid:
        raise BadInput('--time needs the launch grid: --grid "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"')
    _, launch = bench_variants(request, (), opts.launch_args, opts.launch_grid)
    return launch


def run(p: Prepared, progress: Callable[..., AbstractContextManager[Callable[..., None]]]) -> Outcome:
    """Compile the grid (or search the space) and time it, rank the configs, write the winners.

    `progress(what, total)` is the view's progress (views/progress.Reporter): a context giving the
    function called per config with what became of it.
    """
    opts, base = p.opts, p.base
    what = "compiling configs" + (" and timing them" if opts.do_time else "")
    try:
        with progress(what, p.total) as tick:

            def advance(cfg) -> None:
                tick(f"{cfg.label}: {cfg.status}")

            if p.strategy is None:
                configs = sweep_configs.expand(base, p.axes)
                result = sweep_job.compile_and_time(configs, opts.out_dir, p.engine, advance)
            else:
                result = sweep_job.search_and_time(
                    search.make_strategy(p.strategy, p.axes, opts.seed),
                    lambda i, values: sweep_configs.make_config(base, i, values),
                    opts.out_dir,
                    p.engine,
                    advance,
                    trials=opts.trials,
                    time_budget=opts.time_budget,
                    max_registers=opts.max_registers,
                    name=p.strategy,
                )
                configs = result.configs
    finally:
        if p.timers is not None:
            p.timers.close()
    ordered = rank.sort_configs(configs, opts.sort_key)
    if opts.write_recipe is not None:
        rank.write_winners(opts.write_recipe, base, configs, ordered, result.timed, opts.sort_key, opts.top)
    return Outcome(base, configs, ordered, result, result.timed)
