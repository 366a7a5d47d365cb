"""`irscope profile`: where the time goes, per Python line, measured on this machine's GPU."""

from __future__ import annotations

import click

from irscope.cli.options import spec_options


@click.command()
@spec_options
@click.option(
    "--args",
    "launch_args",
    metavar="ARGS",
    help='Launch arguments, as bench takes them: "x=randn(4096, fp32), n=4096, ..." '
    "(irscope/timing/launch.py); a capture spec file brings its own.",
)
@click.option("--grid", metavar="EXPR", help='Grid over the arguments and constexprs: "cdiv(n, BLOCK)".')
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option(
    "--tool",
    type=click.Choice(["auto", "ncu", "proton"]),
    default="auto",
    show_default=True,
    help="What measures: Nsight Compute (ncu on PATH: per-instruction counters, bytes, the roofline "
    "point), or Proton's PC sampling (lines and stall reasons only). Auto: ncu where it is.",
)
@click.option(
    "--passes",
    "with_passes",
    is_flag=True,
    help="Dump the per-pass IR too and name, for the hottest lines, the passes that added their ops.",
)
@click.option("--top", type=click.IntRange(1, 10000), default=12, show_default=True, help="Hot lines shown.")
@click.option("--json", "as_json", is_flag=True, help="Print the profile document (profile.json) instead.")
def profile(request, variants, out_dir, no_cache, debug, launch_args, grid, seed, tool, with_passes, top, as_json):
    """Run the kernel once under Nsight Compute (or Proton) and join its counters to the Python lines, the
    TTGIR ops and the passes: hot lines, stall reasons, bytes, and the measured roofline point. FILE may be a
    dump folder that holds a profile.json: it is shown again, no GPU needed."""
    from irscope.profile import command
    from irscope.views import profile as view

    if request.file.is_dir():
        folder, doc = request.file, command.rerender(request.file)
    else:
        plan = command.prepare(
            request, variants, launch_args=launch_args, grid=grid, out_dir=out_dir, seed=seed, tool=tool
        )
        folder, doc = command.run(plan, use_cache=not no_cache, with_passes=with_passes)
        if plan.tool == "proton":
            click.echo(
                "irscope: ncu is not on PATH: measured with Proton's PC sampling (lines and stall reasons only)",
                err=True,
            )
    if as_json:
        click.echo(view.as_json(doc))
    else:
        view.summary(doc, str(folder), top=top)
