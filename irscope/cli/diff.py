"""`irscope diff`: two compiles of a kernel file, or two dump folders, compared (stats, stages, passes).

The other comparisons are their own commands (diff-releases, frontier, diff-profiles; timing is bench);
their old spellings under diff still work for this release (cli/diff_old.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from irscope.cli import diff_old
from irscope.cli.diff_options import diff_options, options_of, show
from irscope.cli.options import recorder, spec_options


@click.command()
@spec_options
@click.argument("dir_b", metavar="[DIR_B]", required=False, type=click.Path(path_type=Path))
@diff_options
@diff_old.old_options
def diff(request, variants, dir_b, out_dir, no_cache, debug, **given):
    """Compare two compiles of a kernel, or two dump folders: stats, stages, passes.
    Exit 0 equal, 1 different, 2 trouble.

    \b
    irscope diff k.py -s SIG --a num_warps=4 --b num_warps=8
    irscope diff k.py -s SIG --a-target h100 --b-target mi300x --stage ttgir
    irscope diff DIR_A DIR_B        (two earlier `irscope dump -o` folders)
    across Triton releases:   irscope diff-releases k.py -s SIG --a-triton 3.6.0 --b-triton 3.9.0
    two scripts' captures:    irscope frontier CAPTURE_A CAPTURE_B
    two measured dumps:       irscope diff-profiles DIR_A DIR_B
    timing two settings:      irscope bench k.py -s SIG --args ... --set num_warps=4 --try num_warps=8

    FILE is a kernel file (or spec file) compiled once per side, or DIR_A.
    Stages are aligned by structure (lines matched inside their function and
    loop, value, register and label names paired across the sides; debug
    locations, paths and hashes dropped), so a renaming is no change and only
    real changes show, each side with its own names, after a summary in words;
    --raw compares the text as is.
    """
    from irscope.compare import command

    old = diff_old.take(given)
    opts, shown = options_of(request, out_dir, no_cache, dir_b, **given)
    status = diff_old.route(opts, shown, old)
    if status is None:
        run = command.run(opts)
        if opts.folders or shown.html is not None:
            status = show(run.result, shown)
        else:  # two compiles of a kernel file: what the cache's direct mode may serve again
            status = recorder().diffed(
                request, out_dir, [run.a, run.b], lambda out: show(run.result, shown, out=out), use_cache=not no_cache
            )
    if status:
        sys.exit(status)
