"""The old spellings under `irscope diff`, kept for this release (hidden from --help): each says, in one
line on stderr, which command it now is, then runs that command's own code.

    diff FILE --a-triton R --b-triton R ...   -> irscope diff-releases
    diff CAPTURE_DIR --a-triton R ...         -> irscope diff-releases
    diff CAPTURE_A CAPTURE_B                  -> irscope frontier
    diff --profile DIR_A DIR_B                -> irscope diff-profiles
    diff FILE --a ... --b ... --time          -> irscope bench FILE --set ... --try ... (here: timed as before)

Next release: delete this module and its two lines in cli/diff.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from irscope.errors import BadInput

if TYPE_CHECKING:
    from irscope.compare.command import DiffOptions
    from irscope.views.diff import DiffView

_OPTIONS = [
    click.option("--a-triton", hidden=True),
    click.option("--b-triton", hidden=True),
    click.option("--profile", "with_profile", is_flag=True, hidden=True),
    click.option("--time", "do_time", is_flag=True, hidden=True),
    click.option("--args", "launch_args", hidden=True),
    click.option("--grid", "launch_grid", hidden=True),
    click.option("--max-seconds", type=float, default=20.0, hidden=True),
]
_NAMES = ("a_triton", "b_triton", "with_profile", "do_time", "launch_args", "launch_grid", "max_seconds")


def old_options(f):
    for d in reversed(_OPTIONS):
        f = d(f)
    return f


def take(given: dict) -> dict:
    """The old options' values, taken out of the command's keyword arguments."""
    return {name: given.pop(name) for name in _NAMES}


def note(old: str, new: str) -> None:
    click.echo(
        f"irscope: note: 'irscope {old}' is now 'irscope {new}'; the old form goes away in the next release", err=True
    )


def _given(opts: DiffOptions, view: DiffView) -> list[str]:
    """The diff flags given, by name (the old modes refused those they do not take)."""
    r, a, b = opts.request, opts.a, opts.b
    flags = {
        "--a": a.sets,
        "--b": b.sets,
        "--a-target": a.target,
        "--b-target": b.target,
        "--stage": opts.stages,
        "--passes": opts.passes,
        "--by-line": opts.by_line,
        "--raw": opts.raw,
        "--a-variant": a.variant,
        "--b-variant": b.variant,
        "--html": view.html,
        "--set": r.sets,
        "--target": r.target,
        "--signature": r.signature,
        "--arg": r.named_args,
        "--const": r.consts,
        "--recipe": r.recipe,
    }
    return [name for name, value in flags.items() if value]


def route(opts: DiffOptions, view: DiffView, old: dict) -> int | None:
    """An old form's exit status, once it ran as its new command; None for a plain diff."""
    from pathlib import Path

    from irscope.cli import diff_profiles, diff_releases, frontier
    from irscope.compare.frontier import is_capture_folder

    file, dir_b, time = Path(opts.request.file), opts.dir_b, ["--time"] if old["do_time"] else []
    if old["with_profile"]:
        note("diff --profile", "diff-profiles")
        if _given(opts, view) + time:
            raise BadInput(
                f"{', '.join(_given(opts, view) + time)}: not with --profile, which compares what two "
                f"measured dump folders hold (irscope diff-profiles DIR_A DIR_B)"
            )
        if dir_b is None:
            raise BadInput("--profile compares two dump folders: irscope diff-profiles DIR_A DIR_B")
        return diff_profiles.show(file, dir_b, opts.request.kernels, view.as_json)
    if old["a_triton"] or old["b_triton"]:
        note("diff --a-triton/--b-triton", "diff-releases")
        if old["do_time"] or dir_b is not None:
            raise BadInput(
                "--a-triton/--b-triton compile a kernel file or a capture folder; "
                "time each release's dump with irscope bench in its own environment"
            )
        return diff_releases.show(opts, (old["a_triton"], old["b_triton"]), view)
    if dir_b is not None and is_capture_folder(file) and is_capture_folder(dir_b):
        note("diff CAPTURE_A CAPTURE_B", "frontier CAPTURE_A CAPTURE_B")
        if _given(opts, view) + time:
            raise BadInput(
                f"{', '.join(_given(opts, view) + time)}: two capture folders are compared as they are "
                f"(irscope frontier CAPTURE_A CAPTURE_B)"
            )
        return frontier.show(file, dir_b, opts.request.kernels, view.as_json)
    if old["do_time"]:
        note("diff --time", "bench FILE --set KEY=VALUE --try KEY=VALUE")
        return _timed(opts, view, old)
    return None


def _timed(opts: DiffOptions, view: DiffView, old: dict) -> int:
    """diff --time: both sides compiled, compared and timed on this machine's GPU, as before."""
    from irscope.cli.diff_options import show
    from irscope.cli.options import timing_session
    from irscope.compare import command
    from irscope.timing import bench as bench_job
    from irscope.timing.plan import side_variants

    if opts.folders:
        raise BadInput("--time compiles and launches a kernel file; two dump folders cannot be timed")
    session = timing_session()  # torch and CUDA come up while the sides compile
    run = command.run(opts)
    timed_variants, launch = side_variants(
        run.jobs, (run.a.label, run.b.label), opts.request, old["launch_args"], old["launch_grid"]
    )
    timed = bench_job.run(timed_variants, launch, max_seconds=old["max_seconds"], session=session)
    return show(run.result, view, timed)
