"""The options `irscope diff` and `irscope diff-releases` share: what each side changes (--a/--b,
--a-target/--b-target, --a-variant/--b-variant) and how the diff is shown (--stage, --passes, --by-line,
--raw, --side-by-side/--unified, -U, --json, --html); options_of turns their values into
compare.command.DiffOptions and views.diff.DiffView."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from irscope import stages
from irscope.cli.options import STAGE_CHOICES

if TYPE_CHECKING:
    from irscope.compare.command import DiffOptions
    from irscope.compare.diff import DiffResult
    from irscope.jobs import Request
    from irscope.timing.bench import BenchReport
    from irscope.views.diff import DiffView

_SIDE_OPTIONS = [
    click.option(
        "--a",
        "a_sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="A compile option for side a only, on top of --set (repeatable).",
    ),
    click.option(
        "--b",
        "b_sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="A compile option for side b only, on top of --set (repeatable).",
    ),
    click.option("--a-target", metavar="TARGET", help="Target of side a (default: --target)."),
    click.option("--b-target", metavar="TARGET", help="Target of side b (default: --target)."),
    click.option("--a-variant", metavar="NAME", help="Side a: this variant of the --recipe."),
    click.option("--b-variant", metavar="NAME", help="Side b: this variant of the --recipe."),
]
_VIEW_OPTIONS = [
    click.option(
        "--stage",
        "stages",
        multiple=True,
        metavar="STAGE",
        type=click.Choice([s for s in STAGE_CHOICES if s in stages.TEXT]),
        help="Show this stage's diff after the summary (repeatable): ttir, ttgir, llir, ptx, sass, "
        "amdgcn, frontend, glir, source. The exit status then answers for these stages.",
    ),
    click.option(
        "--passes",
        "with_passes",
        is_flag=True,
        help="Dump both sides with per-pass IR and compare what each MLIR pass did.",
    ),
    click.option(
        "--by-line",
        "by_line",
        is_flag=True,
        help="Also say per Python line what changed: instruction classes and opcodes, spills, layouts.",
    ),
    click.option("--raw", is_flag=True, help="Compare the compiler's own text, without normalisation."),
    click.option(
        "--side-by-side/--unified",
        "side_by_side",
        default=None,
        help="Layout of stage diffs. Default: side by side on a terminal of 160 columns or more.",
    ),
    click.option(
        "--context",
        "-U",
        "context",
        type=click.IntRange(0),
        default=3,
        show_default=True,
        help="Lines of context around each change.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead."),
    click.option(
        "--html",
        type=click.Path(path_type=Path),
        metavar="FILE",
        help="Also write the diff as one self-contained HTML page to FILE.",
    ),
]


def diff_options(f):
    """What each side changes (--a/--b, --a-target/--b-target, --a-variant/--b-variant) and how the diff
    is shown: the options diff and diff-releases share."""
    for d in reversed(_SIDE_OPTIONS + _VIEW_OPTIONS):
        f = d(f)
    return f


def options_of(
    request: Request,
    out_dir: str | Path,
    no_cache: bool,
    dir_b: Path | None = None,
    *,
    a_sets=(),
    b_sets=(),
    a_target=None,
    b_target=None,
    a_variant=None,
    b_variant=None,
    stages=(),
    with_passes=False,
    by_line=False,
    raw=False,
    side_by_side=None,
    context=3,
    as_json=False,
    html=None,
) -> tuple[DiffOptions, DiffView]:
    """diff_options' values as compare.command.DiffOptions and views.diff.DiffView (--html checked first)."""
    from irscope.compare.command import DiffOptions
    from irscope.compare.sides import SideRequest
    from irscope.views.diff import DiffView

    if html is not None:
        from irscope.report.output import check_output

        check_output(html, "--html")
    opts = DiffOptions(
        request=request,
        a=SideRequest("a", a_target, list(a_sets), a_variant),
        b=SideRequest("b", b_target, list(b_sets), b_variant),
        dir_b=dir_b,
        out_dir=Path(out_dir),
        stages=tuple(stages),
        passes=with_passes,
        by_line=by_line,
        raw=raw,
        use_cache=not no_cache,
    )
    return opts, DiffView(side_by_side=side_by_side, context=context, as_json=as_json, html=html)


def show(result: DiffResult, view: DiffView, timed: BenchReport | None = None, out=None) -> int:
    """The one place a diff is shown: views.diff.render (the --json document or the summary and the stages'
    diffs) into `out` (None: stdout), then the --html page. Returns the exit status: 0 equal, 1 different."""
    from irscope.views import diff as diff_view

    status = diff_view.render(result, view, timed, out)
    if view.html is not None:
        from irscope.views import report as report_view

        click.echo(report_view.write_diff(result, view.html), err=view.as_json)
    return status
