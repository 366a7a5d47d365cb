"""`irscope diff-releases FILE|SPEC|CAPTURE_DIR --a-triton R --b-triton R`: compiles across Triton releases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from irscope.cli import diff_options as shared
from irscope.cli.diff_options import diff_options, options_of
from irscope.cli.options import spec_options
from irscope.errors import BadInput

if TYPE_CHECKING:
    from irscope.compare.command import DiffOptions
    from irscope.views.diff import DiffView


@click.command("diff-releases")
@spec_options
@click.option(
    "--a-triton",
    metavar="RELEASE",
    help="Side a compiles with this Triton: a release (3.6.0), "
    "fbtriton==3.7.4, or a Python interpreter's path; its env is made once in irscope's cache.",
)
@click.option(
    "--b-triton",
    metavar="RELEASE",
    help="Side b compiles with this Triton (as --a-triton). A side without one uses the running Triton.",
)
@diff_options
def diff_releases(request, variants, out_dir, no_cache, debug, a_triton, b_triton, **given):
    """Compare what two Triton releases make of a kernel (FILE, a spec file) or of every kernel of a
    capture folder (`irscope capture SCRIPT -o DIR`, one row each: same, stats changed, code changed,
    fails). Exit 0 equal, 1 different, 2 trouble (a side failed to compile).

    \b
    irscope diff-releases k.py -s SIG --a-triton 3.6.0 --b-triton 3.9.0
    irscope diff-releases k.py -s SIG --a-triton 3.6.0 --stage ttgir --passes
    irscope diff-releases DIR/captures/KERNEL-1.json --a-triton 3.6.0 --b-triton 3.9.0 --by-line
    irscope diff-releases CAPTURE_DIR --a-triton 3.6.0 --b-triton 3.9.0 --passes

    --a/--b, --a-target/--b-target and --a-variant/--b-variant change one side on top of its Triton.
    --html writes one kernel's page (not a capture folder's).
    """
    opts, shown = options_of(request, out_dir, no_cache, **given)
    status = show(opts, (a_triton, b_triton), shown)
    if status:
        sys.exit(status)


def show(opts: DiffOptions, tritons: tuple[str | None, str | None], shown: DiffView) -> int:
    """releases.captures.run and its view; the exit status (0 equal, 1 different, 2 a side failed)."""
    from irscope.releases import captures
    from irscope.views import releases as view
    from irscope.views.progress import reporter

    if shown.html is not None and Path(opts.request.file).is_dir():
        raise BadInput(
            f"--html writes one kernel's page; name one capture: "
            f"irscope diff-releases {opts.request.file}/captures/KERNEL-N.json ..."
        )
    got = captures.run(opts, tritons, note=view.note, progress=reporter(enabled=not shown.as_json))
    if isinstance(got, captures.CaptureTable):
        if shown.as_json:
            click.echo(view.capture_json(got, shown.context))
        else:
            view.capture_table(got, opts.by_line, side_by_side=shown.side_by_side, context=shown.context)
        return got.exit_code
    return shared.show(got.result, shown)
