"""`irscope frontier CAPTURE_A CAPTURE_B`: two scripts' captures, one implementation of an op each,
compared on the figures that decide between them (compare/frontier.py)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("frontier")
@click.argument("capture_a", type=click.Path(path_type=Path))
@click.argument("capture_b", type=click.Path(path_type=Path))
@click.option(
    "--kernel",
    "-k",
    "kernels",
    multiple=True,
    metavar="NAME|GLOB",
    help="Keep only these kernels, by name or glob (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def frontier(capture_a: Path, capture_b: Path, kernels: tuple[str, ...], as_json: bool, debug: bool) -> None:
    """Compare two capture folders (`irscope capture SCRIPT -o DIR`): each side's kernels, what made each
    (torch.compile's layer, a hand-written kernel), its direction, launches, bytes, registers, spills,
    shared memory and occupancy, with totals per direction. Exit 0: two implementations are compared,
    not found equal or different.

    \b
    irscope dump rmsnorm_inductor.py -t h100 -o inductor
    irscope dump rmsnorm_liger.py -t h100 -o liger
    irscope frontier inductor liger
    irscope frontier inductor liger --kernel '*rms*' --json

    To diff one captured kernel's compiles: irscope diff DIR/captures/KERNEL-N.json --a ... --b ...
    """
    show(capture_a, capture_b, kernels, as_json)


def show(capture_a: Path, capture_b: Path, kernels: tuple[str, ...], as_json: bool) -> int:
    """Both capture folders read, compared and printed; the exit status (0)."""
    from irscope.compare import frontier as compare_frontier
    from irscope.views import frontier as view

    result = compare_frontier.frontier(capture_a, capture_b, tuple(kernels))
    if as_json:
        click.echo(view.frontier_json(result))
    else:
        view.frontier_table(result)
    return 0
