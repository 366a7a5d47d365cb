"""Command line: each command parses its options, calls the jobs and packages, and hands the result
to its view (irscope/views); main() turns errors into one line and an exit status.

No compiler logic and no formatting lives here. Imports of irscope's packages stay inside the
commands (this is the command boundary), so `irscope --help` loads neither Triton nor torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from irscope.cli.options import (
    DUTY_OPTION,
    LOAD_TIMEOUT_OPTION,
    STAGE_CHOICES,
    spec_options,
)
from irscope.errors import BadInput, IrscopeError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irscope")
def cli():
    """irscope: see and steer what the Triton compiler makes of a kernel."""


@cli.command()
@spec_options
@click.option("--stage", type=click.Choice(STAGE_CHOICES), help="Print this stage to stdout instead of the summary.")
@click.option("--passes", "with_passes", is_flag=True, help="Also record the IR after every MLIR pass.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead of the summary.")
@click.option("--script-log", type=click.Path(dir_okay=False), metavar="FILE",
              help="Capture: send the script's own output (stdout and stderr) to FILE.")
@click.option("--compile-only", is_flag=True,
              help="Capture: do not run kernels even on the local GPU; record launches and compile only.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Capture: end the script after SECONDS; what it captured so far is written and dumped "
                   "(as after Ctrl-C or SIGTERM: one line says why, exit 0 when a kernel was dumped).")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS]")
def dump(request, variants, out_dir, no_cache, debug, stage, with_passes, as_json, script_log, compile_only,
         time_limit, script_args):
    """Compile a kernel and lay out every stage, its resources and instruction mix.

    \b
    With no --signature/--arg/--const, FILE is a script: it runs (as __main__, with
    ARGS after --) and every kernel it compiles is captured and dumped; --kernel
    filters by name (glob). Without a GPU, or for another --target, kernels are
    compiled for the target and launches recorded, not run.
    """
    from irscope.core import dump as dump_job
    from irscope.core import inputs
    from irscope.views import dump as view

    inputs.check_dump_flags(stage, as_json, out_dir)
    if not request.has_specialization and not request.is_spec_file:
        from irscope.capture import command as capture
        from irscope.views import capture as capture_view

        script_log = inputs.check_log_file(script_log)
        if (unused := capture.not_applied(request, variants, out_dir)) is not None:
            capture_view.print_warning(unused)
        run = capture.run(request.file, list(script_args), list(request.kernels), request.target,
                          request.all_sets(), out_dir, no_cache, with_passes, bool(stage or as_json), stage,
                          script_log, compile_only, time_limit)
        capture_view.render(run, stage, as_json)
        code = capture.exit_status(run, request.file)
        if code:
            sys.exit(code)
        return
    inputs.check_capture_only(script_args, script_log, compile_only)
    if time_limit is not None:
        raise BadInput("--time-limit: applies when FILE is a script run for capture (no --signature/--arg/--const)")
    from irscope import jobs

    todo = jobs.variants(request, variants)
    for job in todo:
        inputs.check_stage_for_target(stage, job.settings.target)
    results = [dump_job.dump(job.spec, job.settings, out_dir, with_passes, not no_cache) for job in todo]
    if stage:
        inputs.check_stage(results, stage)
        view.print_stage(results, stage)
    elif as_json:
        click.echo(view.as_json(results))
    else:
        view.summary(results)
    if stage or as_json:  # the summary shows pin checks; other views get the warnings on stderr
        view.warn_pins_without_effect(results)


@cli.command()
@spec_options
@click.option("--first", "pattern", metavar="REGEX", help="Name the pass that first produced IR matching REGEX.")
@click.option("--all", "show_all", is_flag=True, help="List every pass, not only those that changed the IR.")
def passes(request, variants, out_dir, no_cache, debug, pattern, show_all):
    """The IR after every MLIR pass: which passes changed it, and which first produced a pattern.

    FILE is a kernel file (compiled with the same options as dump) or an earlier
    `irscope dump --passes` folder.
    """
    from irscope.core import dump as dump_job
    from irscope.core import passes as passes_mod
    from irscope.views import passes as view

    if pattern is not None:
        passes_mod.check_pattern(pattern)
    if request.file.is_dir():
        folders = [(request.file, passes_mod.read_folder(request.file))]
    else:
        from irscope import jobs
        from irscope.core import inputs

        inputs.check_output_dir(out_dir)
        results = [dump_job.dump(job.spec, job.settings, out_dir, True, not no_cache)
                   for job in jobs.variants(request, variants)]
        folders = [(r.folder, r.manifest) for r in results]
    for folder, manifest in folders:
        records, afters, first_ir = passes_mod.load(folder, manifest)
        view.header(folder, manifest, records)
        if pattern is None:
            view.table(records, show_all)
            continue
        hit = passes_mod.first_producer(pattern, records, afters, first_ir, passes_mod.stage_texts(folder, manifest))
        view.first_match(pattern, hit, folder)
        if hit.where == "none":
            sys.exit(1)


@cli.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--kernel", "-k", "kernels", multiple=True, metavar="NAME", help="Kernel to show (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@LOAD_TIMEOUT_OPTION
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def signature(file, kernels, as_json, load_timeout, debug):
    """A kernel's parameters (name, constexpr or not, default) and a ready --signature template."""
    from irscope.core import loader, spec
    from irscope.views import signature as view

    loader.set_load_timeout(load_timeout)
    (view.print_json if as_json else view.listing)(file, spec.signatures(file, list(kernels)))


@cli.command()
@spec_options
@click.argument("dir_b", metavar="[DIR_B]", required=False, type=click.Path(path_type=Path))
@click.option("--a", "a_sets", multiple=True, metavar="KEY=VALUE",
              help="A compile option for side a only, on top of --set (repeatable).")
@click.option("--b", "b_sets", multiple=True, metavar="KEY=VALUE",
              help="A compile option for side b only, on top of --set (repeatable).")
@click.option("--a-target", metavar="TARGET", help="Target of side a (default: --target).")
@click.option("--b-target", metavar="TARGET", help="Target of side b (default: --target).")
@click.option("--stage", "stages", multiple=True, metavar="STAGE",
              type=click.Choice([s for s in STAGE_CHOICES if s not in ("cubin", "hsaco")]),
              help="Show this stage's diff after the summary (repeatable): ttir, ttgir, llir, ptx, sass, amdgcn, "
                   "frontend, glir, source. The exit status then answers for these stages.")
@click.option("--passes", "with_passes", is_flag=True,
              help="Dump both sides with per-pass IR and compare what each MLIR pass did.")
@click.option("--raw", is_flag=True, help="Compare the compiler's own text, without normalisation.")
@click.option("--side-by-side/--unified", "side_by_side", default=None,
              help="Layout of stage diffs. Default: side by side on a terminal of 160 columns or more.")
@click.option("--context", "-U", "context", type=click.IntRange(0), default=3, show_default=True,
              help="Lines of context around each change.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@click.option("--a-variant", metavar="NAME", help="Side a: this variant of the --recipe.")
@click.option("--b-variant", metavar="NAME", help="Side b: this variant of the --recipe.")
@click.option("--time", "do_time", is_flag=True, help="Also time both sides on this machine's GPU (as bench does).")
@click.option("--args", "launch_args", metavar="ARGS", help="With --time: launch arguments (as for bench).")
@click.option("--grid", "launch_grid", metavar="EXPR", help="With --time: the launch grid (as for bench).")
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="With --time: timing budget.")
def diff(request, variants, dir_b, out_dir, no_cache, debug, a_sets, b_sets, a_target, b_target, stages,
         with_passes, raw, side_by_side, context, as_json, a_variant, b_variant, do_time, launch_args, launch_grid,
         max_seconds):
    """Compare two compiles of a kernel: stats, stages, passes. Exit 0 equal, 1 different, 2 trouble.

    \b
    irscope diff k.py -s SIG --a num_warps=4 --b num_warps=8
    irscope diff k.py -s SIG --a-target h100 --b-target mi300x --stage ttgir
    irscope diff DIR_A DIR_B        (two earlier `irscope dump -o` folders)

    FILE is a kernel file (or spec file) compiled once per side, or DIR_A.
    Stages are compared after normalisation (value, register and label names
    renumbered in order of first appearance; debug locations, paths and hashes
    dropped), so only real changes show; --raw compares the text as is.
    """
    from irscope.compare import diff as diff_mod
    from irscope.compare import sides
    from irscope.core import inputs
    from irscope.views import bench as bench_view
    from irscope.views import diff as view

    file = request.file
    session = None
    if do_time:
        if dir_b is not None or file.is_dir():
            raise BadInput("--time compiles and launches a kernel file; two dump folders cannot be timed")
        session = _timing_session()
    if dir_b is not None or file.is_dir():
        if dir_b is None:
            raise BadInput(f"{file}: a dump folder; give a second one to compare with (irscope diff DIR_A DIR_B)")
        compile_flags = [name for name, given in (
            ("--a", a_sets), ("--b", b_sets), ("--a-target", a_target), ("--b-target", b_target),
            ("--set", request.sets), ("--target", request.target), ("--signature", request.signature),
            ("--arg", request.named_args), ("--const", request.consts)) if given]
        if compile_flags:
            raise BadInput(f"{', '.join(compile_flags)}: apply when compiling a kernel file; "
                           f"DIR_A DIR_B compares two dumps as they are")
        a = sides.load_side("a", file, request.kernels)
        b = sides.load_side("b", dir_b, request.kernels)
        sides.check_same_kernel(a, b)
    else:
        reqs = (sides.SideRequest("a", a_target, list(a_sets), a_variant),
                sides.SideRequest("b", b_target, list(b_sets), b_variant))
        inputs.check_output_dir(out_dir)  # both sides are written there: refused before either compiles
        side_jobs = sides.side_jobs(request, reqs)
        a, b = sides.dump_sides(side_jobs, reqs, out_dir, with_passes, not no_cache)
    result = diff_mod.compare(a, b, list(stages), normalized=not raw, require_passes=with_passes)
    timed = None
    if do_time:
        from irscope.timing import bench as bench_job
        from irscope.timing.plan import side_variants

        variants, launch = side_variants(side_jobs, (a.label, b.label), request, launch_args, launch_grid)
        timed = bench_job.run(variants, launch, max_seconds=max_seconds, session=session)
    if as_json:
        click.echo(view.diff_json_with_timing(result, context, timed))
    else:
        view.diff_summary(result)
        if result.selected:
            view.print_stage_diffs(result, side_by_side, context)
        if timed is not None:
            bench_view.bench_summary(timed)
    if not result.equal:
        sys.exit(1)


def _timing_session():
    """Start the timing process now, so torch and the CUDA context come up while irscope compiles."""
    from irscope.timing.bench import TimingSession, require_gpu

    session = TimingSession()  # first: every moment counts on its way to a CUDA context
    click.get_current_context().call_on_close(session.close)
    require_gpu()
    return session


@cli.command()
@spec_options
@click.option("--args", "launch_args", metavar="ARGS",
              help='Launch arguments: "x=randn(4096, fp32), n=4096, ..." (see irscope/timing/launch.py).')
@click.option("--grid", metavar="EXPR", help='Grid over the arguments and constexprs: "cdiv(n, BLOCK)".')
@click.option("--try", "tries", multiple=True, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Another variant: these options on top of the baseline's (repeatable).")
@click.option("--aa", is_flag=True, help="Add a copy of the baseline as a variant (an A/A check of the noise).")
@click.option("--flops", metavar="EXPR", help='FLOPs per launch, e.g. "2*M*N*K": gives TFLOP/s and % of peak.')
@click.option("--bytes", "nbytes", metavar="EXPR", help="Bytes moved per launch: gives GB/s and % of peak.")
@click.option("--precision", type=float, default=0.005, show_default=True,
              help="Stop once every ratio's 95% CI half-width is within this fraction.")
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="Time budget for the rounds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--graph", type=click.Choice(["off", "on", "auto"]), default="off", show_default=True,
              help="Time inside CUDA graphs (auto: kernels under 100 us). Off by default: on the H200 they "
                   "showed A/A offsets up to 3 % on a 4 us kernel (docs/benchmarks.md); events did not.")
@DUTY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def bench(request, variants, out_dir, no_cache, debug, launch_args, grid, tries, aa, flops, nbytes, precision,
          max_seconds, seed, graph, duty, as_json):
    """Time variants of a kernel on this machine's GPU: interleaved, L2-flushed, with confidence intervals."""
    from irscope.timing import bench as bench_job
    from irscope.timing.plan import bench_variants
    from irscope.views import bench as view

    session = _timing_session()
    timed, launch = bench_variants(request, variants, launch_args, grid, tries, aa)
    result = bench_job.run(timed, launch, seed=seed, flops=flops, nbytes=nbytes, precision=precision,
                           max_seconds=max_seconds, graph=graph, duty=duty, session=session)
    if as_json:
        click.echo(view.bench_json(result))
    else:
        view.bench_summary(result)


@cli.group("recipes")
def recipes_group():
    """Recipes: TOML files that pin a target's options, env knobs, constexprs, loops and layouts.

    \b
    irscope recipes list
    irscope recipes show h100 [--kernel matmul_kernel] [--variant deep-pipeline]
    irscope recipes check recipes/*.toml        (exit 2 on any problem)
    irscope dump k.py --recipe mi300x [--variant pingpong] -s SIG
    """


@recipes_group.command("list")
def recipes_list():
    """Every recipe found ($IRSCOPE_RECIPES, then irscope's recipes/): name, target, purpose."""
    from irscope.steer import recipes
    from irscope.views import recipes as view

    view.listing(recipes.summary_rows(), recipes.recipe_dirs())


@recipes_group.command("show")
@click.argument("name", metavar="NAME|PATH")
@click.option("--kernel", "-k", metavar="NAME", help="Show what applies to this kernel, with where each value comes from.")
@click.option("--variant", metavar="NAME",
              help="Show the recipe as this variant applies it: its defaults and kernel sections on top "
                   "(with --kernel: for that kernel).")
def recipes_show(name, kernel, variant):
    """A recipe: its target, purpose, defaults, kernel sections and variants (and the file)."""
    from irscope.core.settings import Settings
    from irscope.steer import layering, recipes
    from irscope.views import recipes as view

    recipe = recipes.load(recipes.find(name))
    v = recipe.variant(variant) if variant else None
    view.show_header(recipe, v)
    if kernel or v:
        # kernel None: the default tables with the variant's on top, each value with where it comes from
        settings = layering.apply(Settings(recipe.target, f"recipe {recipe.name}"), recipe, variant, kernel)
        view.show_applied(recipe, variant, v, kernel, settings)
    else:
        view.show_layers(recipe)


@recipes_group.command("check")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path), metavar="FILE...")
def recipes_check(files):
    """Validate recipe files (default: every recipe found). Exit 2 with FILE:LINE for each problem."""
    from irscope.steer import recipes
    from irscope.views import recipes as view

    bad = 0
    for path in list(files) or recipes.all_paths():
        errors = recipes.check(path)
        view.check_result(path, errors)
        bad += bool(errors)
    if bad:
        sys.exit(2)


@cli.command()
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

    session = _timing_session() if do_time else None
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


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        cli.main(args=argv, prog_name="irscope", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("irscope: aborted", err=True)
        sys.exit(1)
    except (click.ClickException, IrscopeError) as e:  # bad input (click's own, or irscope's), a compile failure
        if debug:
            raise
        from_click = isinstance(e, click.ClickException)
        click.echo(f"irscope: error: {e.format_message() if from_click else e}", err=True)
        sys.exit(2 if from_click else e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # an irscope bug: say so in one line, keep the trace behind --debug
        if debug:
            raise
        click.echo(f"irscope: internal error: {type(e).__name__}: {e} (run again with --debug for the traceback)",
                   err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
