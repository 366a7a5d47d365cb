"""`irscope sweep`: compile a grid (or a search) of settings in parallel, rank them, optionally time them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from irscope.cli.options import DUTY_OPTION, spec_options, timing_session
from irscope.errors import BadInput


@click.command()
@spec_options
@click.option("--grid", "axes", multiple=True, metavar="KEY=V1,V2,...|A..B[:pow2|:stepN]",
              help="One axis of the sweep: an option (num_warps=4,8) or a constexpr (BLOCK_M=64,128), values or "
                   "ranges (BLOCK_M=16..256:pow2, num_stages=1..5, BLOCK_K=32..256:step32). Repeatable.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Compile processes (default: the cores).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds one config may compile.")
@click.option("--sort", "sort_key", default="config", show_default=True,
              help="config, registers, spills, shared, occupancy, mma or ld128.")
@click.option("--cluster", default="local", show_default=True, metavar="local|ray[:ADDRESS]",
              help="Where to compile and time: this machine's process pool, or a Ray cluster (pip install "
                   "'irscope[ray]'): compiles as tasks on any node's CPUs, timing in one actor per GPU.")
@click.option("--search", "strategy", metavar="grid|random|optuna|optuna-cmaes",
              help="Search the space instead of compiling all of it: configs proposed a generation at a time "
                   "from the results so far (optuna: pip install 'irscope[search]'). Bound it with --trials or "
                   "--time-budget.")
@click.option("--trials", type=int, default=None, help="With --search: how many configs to try at most.")
@click.option("--time-budget", type=float, default=None, metavar="SECONDS",
              help="With --search: stop proposing after this many seconds.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --search random|optuna: the seed.")
@click.option("--max-registers", type=click.IntRange(1), default=None,
              help="With --search: prune configs that use more registers per thread than this, untimed.")
@click.option("--time", "do_time", is_flag=True, help="Time the survivors on the GPU (this machine's, or the cluster's).")
@click.option("--args", "launch_args", metavar="ARGS", help="With --time: launch arguments (as for bench).")
@click.option("--launch-grid", metavar="EXPR", help="With --time: the launch grid (as bench's --grid).")
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="With --time: timing budget.")
@click.option("--graph", type=click.Choice(["off", "on", "auto"]), default="off", show_default=True,
              help="With --time: time inside CUDA graphs (see bench --help).")
@DUTY_OPTION
@click.option("--db", "db_path", type=click.Path(path_type=Path), default=None, metavar="PATH",
              help="With --time or --history: the SQLite database of measurements (default: sweeps.sqlite in "
                   "irscope's cache folder). Measurements made under the same conditions are reused.")
@click.option("--no-db", is_flag=True, help="With --time: neither reuse nor record measurements.")
@click.option("--history", is_flag=True, help="List the past timed sweeps of this file's kernel(s) and exit.")
@click.option("--sass", "with_sass", is_flag=True,
              help="Disassemble every config's cubin too (nvdisasm: 0.3-0.5 s a config; the ranking does not need it).")
@click.option("--write-recipe", type=click.Path(path_type=Path), metavar="PATH",
              help="Write the winner (and --top N best) as variants of a recipe that `recipes check` accepts.")
@click.option("--top", type=click.IntRange(1), default=1, show_default=True, help="With --write-recipe: how many.")
@click.option("--json", "as_json", is_flag=True, help="Print one result per config as JSON.")
@click.option("--html", type=click.Path(path_type=Path), metavar="FILE",
              help="Also write the sweep's table and charts as one self-contained HTML page to FILE.")
@click.option("--ref", "ref_text", metavar="CALL",
              help="With --time: what a user would call instead, timed in the same rounds (as bench --ref): "
                   "the winner is stated against it, e.g. \"torch.matmul(a_ptr, b_ptr)\".")
def sweep(request, variants, out_dir, no_cache, debug, axes, jobs, timeout, sort_key, cluster, strategy, trials,
          time_budget, seed, max_registers, do_time, launch_args, launch_grid, max_seconds, graph, duty, db_path,
          no_db, history, with_sass, write_recipe, top, as_json, html, ref_text):
    """Compile a grid of settings in parallel, rank them by static stats, optionally time the survivors."""
    from irscope import jobs as jobs_mod
    from irscope.sweep import configs as sweep_configs
    from irscope.sweep import history as sweep_history
    from irscope.sweep import rank, ray_engine, search
    from irscope.sweep import run as sweep_job
    from irscope.views import sweep as view

    if history:
        db = sweep_history.History(db_path)
        kernels = list(request.kernels) or None
        view.history_table(db.sweeps(kernels, str(Path(request.file).resolve()) if not kernels else None),
                           db.path, as_json)
        return
    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")
    engine_name, address = ray_engine.parse_cluster(cluster)
    search.check_search(strategy, trials, time_budget, 0)   # an unknown strategy: before anything loads
    session = timing_session() if do_time and engine_name == "local" else None
    base = jobs_mod.resolve_one(request, "sweep explores")
    axes_typed = sweep_configs.parse_axes(list(axes), base)
    size = sweep_configs.space_size(axes_typed)
    search.check_search(strategy, trials, time_budget, size)
    n_jobs = jobs or os.cpu_count() or 1
    sweep_job.check_inputs(out_dir, n_jobs, timeout)
    if write_recipe is not None:
        rank.check_recipe_path(write_recipe)
    if sort_key not in rank.COLUMNS and sort_key != "config":
        raise BadInput(f"--sort {sort_key!r}: sort by one of config, {', '.join(rank.COLUMNS)}")
    if strategy is None and size > sweep_configs.MAX_GRID:
        raise BadInput(f"--grid: {size} configs is more than a sweep enumerates ({sweep_configs.MAX_GRID}); "
                       "search the space instead: --search random|optuna --trials N")
    launch = None
    if do_time:
        from irscope.timing.plan import bench_variants

        if not launch_args and not request.is_spec_file:
            raise BadInput("--time needs launch arguments: --args \"a=randn(M, K, bf16), ...\" and --launch-grid")
        if launch_args and not launch_grid:
            raise BadInput("--time needs the launch grid: --launch-grid \"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)\"")
        _, launch = bench_variants(request, (), launch_args, launch_grid)
    ref = None
    if ref_text is not None:
        if not do_time:
            raise BadInput("--ref: a reference is timed with --time (give --time --args ... --launch-grid ...)")
        from irscope.timing import reference

        ref = reference.parse(ref_text, launch)
    db = sweep_history.History(db_path) if do_time and not no_db else None
    resources = ray_engine.connect(address, need_gpu=do_time) if engine_name == "ray" else {}
    measure = {"max_seconds": max_seconds, "prune": sweep_job.PRUNE_MARGIN, "graph": graph, "duty": duty, "ref": ref}
    timers = None
    if do_time:
        from irscope.sweep.timers import LocalTimers

        timers = (ray_engine.Timers(launch, measure) if engine_name == "ray"
                  else LocalTimers(session, launch, measure))
    if engine_name == "ray":
        n_jobs = jobs or int(resources.get("CPU", 1))
    engine = sweep_job.Engine(n_jobs, timeout, not no_cache, with_sass, engine_name, timers, db,
                              {"launch": launch, **measure})
    total = trials or size
    if strategy is not None:
        strategy, degraded = search.available(strategy)
        if degraded:
            view.note(degraded)
    try:
        with view.sweep_progress(total, enabled=not as_json) as advance:
            if strategy is None:
                configs = sweep_configs.expand(base, axes_typed)
                result = sweep_job.compile_and_time(configs, out_dir, engine, advance)
            else:
                result = sweep_job.search_and_time(
                    search.make_strategy(strategy, axes_typed, seed),
                    lambda i, values: sweep_configs.make_config(base, i, values), out_dir, engine, advance,
                    trials=trials, time_budget=time_budget, max_registers=max_registers, name=strategy)
                configs = result.configs
    finally:
        if timers is not None:
            timers.close()
    timed = result.timed
    ordered = rank.sort_configs(configs, sort_key)
    if write_recipe is not None:
        rank.write_winners(write_recipe, base, configs, ordered, timed, sort_key, top)
    if as_json:
        click.echo(view.sweep_json(ordered, result))
    else:
        view.sweep_table(ordered, timed, search=result.search)
        if write_recipe is not None:
            view.wrote_recipe(write_recipe)
    if html is not None:
        from irscope.views import report as report_view

        click.echo(report_view.write_sweep(ordered, timed, html, title=f"{base.spec.kernel} on {base.settings.target.name}"),
                   err=as_json)
    if not any(c.usable for c in configs):
        sys.exit(1)
