"""A diff's two sides and their comparison, as `irscope diff` and the Python API (irscope.diff) both get them.

    file_sides    FILE and what each side changes (SideRequest: --a/--b, --a-target/--b-target,
                  --a-variant/--b-variant) -> both sides dumped into one folder, or neither
    folder_sides  DIR_A DIR_B (or two dump folders the API was given) -> both sides, as they are
    compare       the comparison itself (diff.compare): stats, stages, passes, by line
    profile       DIR_A DIR_B --profile -> profiles.ProfileDiff (two measured dumps, line by line)
    refuse_compile_flags / refuse_with_profile   which flags a mode takes (the CLI names what was given)

The CLI parses and renders around these; irscope.api wraps the result for Python. Nothing here prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irscope import jobs
from irscope.compare import diff, profiles, sides
from irscope.compare.sides import Side, SideRequest
from irscope.errors import BadInput
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


def _request_flags(request: jobs.Request) -> dict[str, Any]:
    return {"--set": request.sets, "--target": request.target, "--signature": request.signature,
            "--arg": request.named_args, "--const": request.consts}


def refuse_compile_flags(request: jobs.Request, given: dict[str, Any]) -> None:
    """DIR_A DIR_B compares two dumps as they are: a flag that only applies when compiling is BadInput.
    `given`: the side flags as the CLI names them (--a, --b, --a-target, --b-target) and their values."""
    named = [name for name, value in {**given, **_request_flags(request)}.items() if value]
    if named:
        raise BadInput(f"{', '.join(named)}: apply when compiling a kernel file; "
                       f"DIR_A DIR_B compares two dumps as they are")


def refuse_with_profile(request: jobs.Request, given: dict[str, Any]) -> None:
    """--profile reads what two dumps measured: every flag of another mode (compiling, stages, passes,
    timing, other Tritons, the HTML page) is refused by name, before anything is read."""
    named = [name for name, value in {**given, **_request_flags(request), "--recipe": request.recipe}.items()
             if value]
    if named:
        raise BadInput(f"{', '.join(named)}: not with --profile, which compares what two measured dump folders "
                       f"hold (irscope diff --profile DIR_A DIR_B)")


def profile(dir_a: Path, dir_b: Path | None, request: jobs.Request, given: dict[str, Any]) -> profiles.ProfileDiff:
    """`diff --profile DIR_A DIR_B`: the flags checked, both folders read (one kernel), their profiles compared."""
    refuse_with_profile(request, given)
    if dir_b is None or not Path(dir_a).is_dir():
        raise BadInput("--profile compares two dump folders that irscope profile measured: "
                       "irscope diff --profile DIR_A DIR_B")
    a, b = folder_sides(dir_a, dir_b, request.kernels)
    return profiles.profile_diff(a, b)
