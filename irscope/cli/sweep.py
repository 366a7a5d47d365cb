"""`irscope sweep`: compile a grid (or a search) of settings in parallel, rank them, optionally time them.

Parsing and rendering only: the checks and the engine are sweep/command.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from irscope.cli.bench import DUTY_OPTION
from irscope.cli.options import spec_options, timing_session


@click.command()
@spec_options
@click.option(
    "--axis",
    "axes",
    multiple=True,
    metavar="KEY=V1,V2,...|A..B[:pow2|:stepN]",
    help="One axis of the sweep: an option (num_warps=4,8) or a constexpr (BLOCK_M=64,128), values or "
    "ranges (BLOCK_M=16..256:pow2, num_stages=1..5, BLOCK_K=32..256:step32). Repeatable.",
)
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Compile processes (default: the cores).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds one config may compile.",
)
@click.option(
    "--sort",
    "sort_key",
    default="config",
    show_default=True,
    help="config, registers, spills, shared, occupancy, mma or ld128.",
)
@click.option(
    "--cluster",
    default="local",
    show_default=True,
    metavar="local|ray[:ADDRESS]",
    help="Where to compile and time: this machine's process pool, or a Ray cluster (pip install "
    "'irscope[ray]'): compiles as tasks on any node's CPUs, timing in one actor per GPU.",
)
@click.option(
    "--search",
    "strategy",
    metavar="grid|random|optuna|optuna-cmaes",
    help="Search the space instead of compiling all of it: configs proposed a generation at a time "
    "from the results so far (optuna: pip install 'irscope[search]'). Bound it with --trials or "
    "--time-budget.",
)
@click.option("--trials", type=int, default=None, help="With --search: how many configs to try at most.")
@click.option(
    "--time-budget",
    type=float,
    default=None,
    metavar="SECONDS",
    help="With --search: stop proposing after this many seconds.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    default=0,
    show_default=True,
    help="With --search random|optuna: the seed.",
)
@click.option(
    "--max-registers",
    type=click.IntRange(1),
    default=None,
    help="With --search: prune configs that use more registers per thread than this, untimed.",
)
@click.option(
    "--time", "do_time", is_flag=True, help="Time the survivors on the GPU (this machine's, or the cluster's)."
)
@click.option("--args", "launch_args", metavar="ARGS", help="With --time: launch arguments (as for bench).")
@click.option(
    "--grid", "launch_grid", metavar="EXPR", help='With --time: the launch grid, as bench\'s: "cdiv(n, BLOCK)".'
)
@click.option("--launch-grid", "old_launch_grid", hidden=True)  # refused: the launch grid is --grid
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="With --time: timing budget.")
@click.option(
    "--graph",
    type=click.Choice(["off", "on", "auto"]),
    default="off",
    show_default=True,
    help="With --time: time inside CUDA graphs (see bench --help).",
)
@DUTY_OPTION
@click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path),
    default=None,
    metavar="PATH",
    help="With --time or --history: the SQLite database of measurements (default: sweeps.sqlite in "
    "irscope's cache folder). Measurements made under the same conditions are reused.",
)
@click.option("--no-db", is_flag=True, help="With --time: neither reuse nor record measurements.")
@click.option("--history", is_flag=True, help="List the past timed sweeps of this file's kernel(s) and exit.")
@click.option(
    "--sass",
    "with_sass",
    is_flag=True,
    help="Disassemble every config's cubin too (nvdisasm: 0.3-0.5 s a config; the ranking does not need it).",
)
@click.option(
    "--write-recipe",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Write the winner (and --top N best) as variants of a recipe that `recipes check` accepts.",
)
@click.option("--top", type=click.IntRange(1), default=1, show_default=True, help="With --write-recipe: how many.")
@click.option("--json", "as_json", is_flag=True, help="Print one result per config as JSON.")
@click.option(
    "--html",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Also write the sweep's table and charts as one self-contained HTML page to FILE.",
)
@click.option(
    "--ref",
    "ref_text",
    metavar="CALL",
    help="With --time: what a user would call instead, timed in the same rounds (as bench --ref): "
    'the winner is stated against it, e.g. "torch.matmul(a_ptr, b_ptr)".',
)
def sweep(request, variants, out_dir, no_cache, debug, history, as_json, html, **fields):
    """Compile every config of the --axis settings in parallel, rank them, optionally time the survivors."""
    from irscope.sweep import command
    from irscope.views import sweep as view
    from irscope.views.progress import reporter

    # every other parameter is named as its SweepOptions field: built by keyword, never by position
    opts = command.SweepOptions(out_dir=out_dir, use_cache=not no_cache, **fields)
    command.check_options(opts, history)
    if history:
        view.history_table(*command.history(request, opts.db_path), as_json)
        return
    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")
    prepared = command.prepare(request, opts, timing_session)
    for note in prepared.notes:
        view.note(note)
    done = command.run(prepared, reporter(enabled=not as_json))
    if as_json:
        click.echo(view.sweep_json(done.ordered, done.result))
    else:
        view.sweep_table(done.ordered, done.timed, search=done.result.search)
        if opts.write_recipe is not None:
            view.wrote_recipe(opts.write_recipe)
    if html is not None:
        from irscope.views import report as report_view

        click.echo(
            report_view.write_sweep(
                done.ordered, done.timed, html, title=f"{done.base.spec.kernel} on {done.base.settings.target.name}"
            ),
            err=as_json,
        )
    if not any(c.usable for c in done.configs):
        sys.exit(1)
