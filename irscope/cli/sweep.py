"""`irscope sweep`: compile a grid of settings in parallel, rank them, optionally time them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from irscope.cli.options import DUTY_OPTION, spec_options, timing_session
from irscope.errors import BadInput


@click.command()
@spec_options
@click.option("--grid", "axes", multiple=True, required=True, metavar="KEY=V1,V2,...",
              help="One axis of the sweep: an option (num_warps=4,8) or a constexpr (BLOCK_M=64,128). Repeatable.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Compile processes (default: the cores).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds one config may compile.")
@click.option("--sort", "sort_key", default="config", show_default=True,
              help="config, registers, spills, shared, occupancy, mma or ld128.")
@click.option("--time", "do_time", is_flag=True, help="Time the survivors on this machine's GPU.")
@click.option("--args", "launch_args", metavar="ARGS", help="With --time: launch arguments (as for bench).")
@click.option("--launch-grid", metavar="EXPR", help="With --time: the launch grid (as bench's --grid).")
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="With --time: timing budget.")
@click.option("--graph", type=click.Choice(["off", "on", "auto"]), default="off", show_default=True,
              help="With --time: time inside CUDA graphs (see bench --help).")
@DUTY_OPTION
@click.option("--sass", "with_sass", is_flag=True,
              help="Disassemble every config's cubin too (nvdisasm: 0.3-0.5 s a config; the ranking does not need it).")
@click.option("--write-recipe", type=click.Path(path_type=Path), metavar="PATH",
              help="Write the winner (and --top N best) as variants of a recipe that `recipes check` accepts.")
@click.option("--top", type=click.IntRange(1), default=1, show_default=True, help="With --write-recipe: how many.")
@click.option("--json", "as_json", is_flag=True, help="Print one result per config as JSON.")
def sweep(request, variants, out_dir, no_cache, debug, axes, jobs, timeout, sort_key, do_time, launch_args,
          launch_grid, max_seconds, graph, duty, with_sass, write_recipe, top, as_json):
    """Compile a grid of settings in parallel, rank them by static stats, optionally time the survivors."""
    from irscope import jobs as jobs_mod
    from irscope.sweep import configs as sweep_configs
    from irscope.sweep import rank
    from irscope.sweep import run as sweep_job
    from irscope.views import sweep as view

    session = timing_session() if do_time else None
    base = jobs_mod.resolve_one(request, "sweep explores")
    configs = sweep_configs.expand(base, sweep_configs.parse_axes(list(axes), base))
    sweep_job.check_inputs(out_dir, jobs or os.cpu_count() or 1, timeout)
    if write_recipe is not None:
        rank.check_recipe_path(write_recipe)
    if sort_key not in rank.COLUMNS and sort_key != "config":
        raise BadInput(f"--sort {sort_key!r}: sort by one of config, {', '.join(rank.COLUMNS)}")
    launch = None
    if session is not None:
        from irscope.timing.plan import bench_variants

        if not launch_args and not request.is_spec_file:
            raise BadInput("--time needs launch arguments: --args \"a=randn(M, K, bf16), ...\" and --launch-grid")
        if launch_args and not launch_grid:
            raise BadInput("--time needs the launch grid: --launch-grid \"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)\"")
        _, launch = bench_variants(request, (), launch_args, launch_grid)
    with view.sweep_progress(len(configs), enabled=not as_json) as advance:
        result = sweep_job.compile_and_time(configs, out_dir, jobs or os.cpu_count() or 1, timeout, advance,
                                            use_cache=not no_cache, with_sass=with_sass, session=session,
                                            launch=launch, max_seconds=max_seconds, graph=graph, duty=duty)
    timed = result.timed
    ordered = rank.sort_configs(configs, sort_key)
    if write_recipe is not None:
        rank.write_winners(write_recipe, base, configs, ordered, timed, sort_key, top)
    if as_json:
        click.echo(view.sweep_json(ordered, timed, result.compile_seconds, result.compile_end))
    else:
        view.sweep_table(ordered, timed)
        if write_recipe is not None:
            view.wrote_recipe(write_recipe)
    if not any(c.usable for c in configs):
        sys.exit(1)
