"""`irscope diff-profiles DIR_A DIR_B`: what `irscope profile` measured in two dumps of one kernel, line by line."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("diff-profiles")
@click.argument("dir_a", type=click.Path(path_type=Path))
@click.argument("dir_b", type=click.Path(path_type=Path))
@click.option(
    "--kernel",
    "-k",
    "kernels",
    multiple=True,
    metavar="NAME",
    help="The kernel's dump, where a folder holds several (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def diff_profiles(dir_a: Path, dir_b: Path, kernels: tuple[str, ...], as_json: bool, debug: bool) -> None:
    """Compare what irscope profile measured in two dump folders of one kernel: each Python line's share of
    the warp stalls and its top reasons, biggest change first, with the totals and the settings that
    differ. Exit 0.

    \b
    irscope profile k.py -s SIG --args ... --grid ... --set num_stages=1 -o ns1
    irscope profile k.py -s SIG --args ... --grid ... --set num_stages=3 -o ns3
    irscope diff-profiles ns1 ns3
    irscope diff-profiles ns1 ns3 --json
    """
    show(dir_a, dir_b, kernels, as_json)


def show(dir_a: Path, dir_b: Path, kernels: tuple[str, ...], as_json: bool) -> int:
    """Both folders' profiles compared (compare.command.profile) and printed; the exit status (0)."""
    from irscope.compare import command
    from irscope.views import profile_diff as view

    result = command.profile(dir_a, dir_b, tuple(kernels))
    if as_json:
        click.echo(view.profile_json(result))
    else:
        view.profile_summary(result)
    return 0
