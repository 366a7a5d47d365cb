"""`irscope diff`: two compiles of a kernel side by side (stats, stages, passes, timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from irscope import stages
from irscope.cli.options import STAGE_CHOICES, spec_options, timing_session
from irscope.errors import BadInput


@click.command()
@spec_options
@click.argument("dir_b", metavar="[DIR_B]", required=False, type=click.Path(path_type=Path))
@click.option("--a", "a_sets", multiple=True, metavar="KEY=VALUE",
              help="A compile option for side a only, on top of --set (repeatable).")
@click.option("--b", "b_sets", multiple=True, metavar="KEY=VALUE",
              help="A compile option for side b only, on top of --set (repeatable).")
@click.option("--a-target", metavar="TARGET", help="Target of side a (default: --target).")
@click.option("--b-target", metavar="TARGET", help="Target of side b (default: --target).")
@click.option("--a-triton", metavar="RELEASE", help="Side a compiles with this Triton: a release (3.6.0), "
              "fbtriton==3.7.4, or a Python interpreter's path; its env is made once in irscope's cache.")
@click.option("--b-triton", metavar="RELEASE", help="Side b compiles with this Triton (as --a-triton).")
@click.option("--stage", "stages", multiple=True, metavar="STAGE",
              type=click.Choice([s for s in STAGE_CHOICES if s in stages.TEXT]),
              help="Show this stage's diff after the summary (repeatable): ttir, ttgir, llir, ptx, sass, amdgcn, "
                   "frontend, glir, source. The exit status then answers for these stages.")
@click.option("--passes", "with_passes", is_flag=True,
              help="Dump both sides with per-pass IR and compare what each MLIR pass did.")
@click.option("--by-line", "by_line", is_flag=True,
              help="Also say per Python line what changed: instruction classes and opcodes, spills, layouts.")
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
@click.option("--html", type=click.Path(path_type=Path), metavar="FILE",
              help="Also write the diff as one self-contained HTML page to FILE.")
@click.option("--profile", "with_profile", is_flag=True,
              help="Compare what irscope profile measured in two dump folders, line by line: each Python line's "
                   "share of the warp stalls and its top reasons, biggest change first, with the totals.")
def diff(request, variants, dir_b, out_dir, no_cache, debug, a_sets, b_sets, a_target, b_target, a_triton, b_triton,  # noqa: C901, PLR0915
         stages,
         with_passes, by_line, raw, side_by_side, context, as_json, a_variant, b_variant, do_time, launch_args, launch_grid,
         max_seconds, html, with_profile):
    """Compare two compiles of a kernel: stats, stages, passes. Exit 0 equal, 1 different, 2 trouble.

    \b
    irscope diff k.py -s SIG --a num_warps=4 --b num_warps=8
    irscope diff k.py -s SIG --a-target h100 --b-target mi300x --stage ttgir
    irscope diff DIR_A DIR_B        (two earlier `irscope dump -o` folders)
    irscope diff k.py -s SIG --a-triton 3.6.0 --b-triton 3.9.0
    irscope diff CAPTURE_DIR --a-triton 3.6.0 --b-triton 3.9.0   (every captured kernel)
    irscope diff CAPTURE_A CAPTURE_B   (two scripts' captures: the frontier comparison, exit 0)
    irscope diff --profile DIR_A DIR_B   (two measured dumps: where the stalls moved, exit 0)

    FILE is a kernel file (or spec file) compiled once per side, or DIR_A.
    Stages are compared after normalisation (value, register and label names
    renumbered in order of first appearance; debug locations, paths and hashes
    dropped), so only real changes show; --raw compares the text as is.
    """
    from irscope.compare import command, frontier, sides
    from irscope.kernel import inputs
    from irscope.views import bench as bench_view
    from irscope.views import diff as view

    if with_profile:
        from irscope.views import profile_diff

        result = command.profile(request.file, dir_b, request, {
            "--a": a_sets, "--b": b_sets, "--a-target": a_target, "--b-target": b_target, "--a-triton": a_triton,
            "--b-triton": b_triton, "--stage": stages, "--passes": with_passes, "--by-line": by_line, "--raw": raw,
            "--a-variant": a_variant, "--b-variant": b_variant, "--time": do_time, "--args": launch_args,
            "--grid": launch_grid, "--html": html})
        if as_json:
            click.echo(profile_diff.profile_json(result))
        else:
            profile_diff.profile_summary(result)
        return
    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")

    file = request.file
    session = None
    tritons = (a_triton, b_triton)
    if any(tritons):
        if do_time:
            raise BadInput("--time with --a-triton/--b-triton: time each release's dump with irscope bench in "
                           "its own environment")
        if dir_b is not None:
            raise BadInput("--a-triton/--b-triton compile a kernel file or a capture folder; two dump folders "
                           "are compared as they are")
        if file.is_dir():
            from irscope.releases import captures
            from irscope.views import releases as releases_view

            inputs.check_output_dir(out_dir)
            table = captures.diff_capture(file, request, tritons, out_dir, with_passes, not no_cache,
                                          by_line, note=releases_view.note)
            if as_json:
                click.echo(releases_view.capture_json(table))
            else:
                releases_view.capture_table(table, by_line)
            sys.exit(table.exit_code)
    if dir_b is not None and frontier.is_capture_folder(file) and frontier.is_capture_folder(dir_b):
        _frontier(file, dir_b, request, as_json, a_sets=a_sets, b_sets=b_sets, a_target=a_target,
                  b_target=b_target, stages=stages, with_passes=with_passes, by_line=by_line, raw=raw,
                  a_variant=a_variant, b_variant=b_variant, do_time=do_time, html=html)
        return
    if do_time:
        if dir_b is not None or file.is_dir():
            raise BadInput("--time compiles and launches a kernel file; two dump folders cannot be timed")
        session = timing_session()
    if dir_b is not None or file.is_dir():
        if dir_b is None:
            raise BadInput(f"{file}: a dump folder; give a second one to compare with (irscope diff DIR_A DIR_B)")
        command.refuse_compile_flags(request, {"--a": a_sets, "--b": b_sets, "--a-target": a_target,
                                               "--b-target": b_target})
        a, b = command.folder_sides(file, dir_b, request.kernels)
    else:
        reqs = (sides.SideRequest("a", a_target, list(a_sets), a_variant),
                sides.SideRequest("b", b_target, list(b_sets), b_variant))
        if any(tritons):   # each side compiles in an environment with its own Triton
            from irscope.releases import sides as release_sides
            from irscope.views import releases as releases_view

            inputs.check_output_dir(out_dir)  # both sides are written there: refused before either compiles
            envs = release_sides.side_envs(tritons, note=releases_view.note)
            a, b = release_sides.dump_sides(request, reqs, envs, out_dir, with_passes, not no_cache)
        else:
            a, b, side_jobs = command.file_sides(request, *reqs, out_dir, with_passes, not no_cache)
    result = command.compare(a, b, list(stages), normalized=not raw, require_passes=with_passes, lines=by_line)
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
        if result.by_line is not None:
            view.by_line_summary(result)
        if result.selected:
            view.print_stage_diffs(result, side_by_side, context)
        if timed is not None:
            bench_view.bench_summary(timed)
    if html is not None:
        from irscope.views import report as report_view

        click.echo(report_view.write_diff(result, html), err=as_json)
    if not result.equal:
        sys.exit(1)


def _frontier(dir_a: Path, dir_b: Path, request, as_json: bool, **given) -> None:
    """Two capture folders: each side's kernels and the figures that decide between them (exit 0:
    two implementations are compared, not found equal or different)."""
    from irscope.compare import frontier
    from irscope.views import frontier as view

    flags = {"a_sets": "--a", "b_sets": "--b", "a_target": "--a-target", "b_target": "--b-target",
             "stages": "--stage", "with_passes": "--passes", "by_line": "--by-line", "raw": "--raw",
             "a_variant": "--a-variant", "b_variant": "--b-variant", "do_time": "--time", "html": "--html"}
    refused = [flags[k] for k, v in given.items() if v]
    refused += [name for name, v in (("--set", request.sets), ("--target", request.target),
                                     ("--signature", request.signature), ("--arg", request.named_args),
                                     ("--const", request.consts), ("--recipe", request.recipe)) if v]
    if refused:
        raise BadInput(f"{', '.join(refused)}: two capture folders are compared as they are (the frontier "
                       f"comparison); diff one captured kernel with irscope diff DIR/captures/KERNEL-N.json ...")
    result = frontier.frontier(dir_a, dir_b, request.kernels)
    if as_json:
        click.echo(view.frontier_json(result))
    else:
        view.frontier_table(result)
