"""A diff's two sides and their comparison, as `irscope diff` and the Python API (irscope.diff) both get them.

    file_sides    FILE and what each side changes (SideRequest: --a/--b, --a-target/--b-target,
                  --a-variant/--b-variant) -> both sides dumped into one folder, or neither
    folder_sides  DIR_A DIR_B (or two dump folders the API was given) -> both sides, as they are
    compare       the comparison itself (diff.compare): stats, stages, passes, by line

The CLI parses and renders around these; irscope.api wraps the result for Python. Nothing here prints.
"""

from __future__ import annotations

from pathlib import Path

from irscope import jobs
from irscope.compare import diff, sides
from irscope.compare.sides import Side, SideRequest
from irscope.kernel import inputs

compare = diff.compare


def file_sides(request: jobs.Request, a: SideRequest, b: SideRequest, out_dir: Path, with_passes: bool = False,
               use_cache: bool = True) -> tuple[Side, Side, list[jobs.Job]]:
    """Both sides of a kernel file compiled (or fetched from the cache) into out_dir, and their jobs
    (diff --time launches them). Every side's options are checked before either compiles; a side that
    fails leaves out_dir as it was."""
    inputs.check_output_dir(out_dir)  # both sides are written there: refused before either compiles
    side_jobs = sides.side_jobs(request, (a, b))
    side_a, side_b = sides.dump_sides(side_jobs, (a, b), out_dir, with_passes, use_cache)
    return side_a, side_b, side_jobs


def folder_sides(dir_a: Path, dir_b: Path, kernels: tuple[str, ...] = ()) -> tuple[Side, Side]:
    """Two earlier dumps (a dump folder, or an -o folder holding one), read as they are; they must
    hold the same kernel."""
    side_a = sides.load_side("a", Path(dir_a), kernels)
    side_b = sides.load_side("b", Path(dir_b), kernels)
    sides.check_same_kernel(side_a, side_b)
    return side_a, side_b
