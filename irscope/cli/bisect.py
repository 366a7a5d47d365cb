"""`irscope bisect`: the first Triton release where a kernel turns bad, and the pass that did it."""

from __future__ import annotations

import sys

import click

from irscope.cli.options import spec_options
from irscope.errors import BadInput


@click.command()
@spec_options
@click.option("--good", required=True, metavar="RELEASE", help="A Triton release where the kernel is good (older).")
@click.option("--bad", required=True, metavar="RELEASE", help="A Triton release where it is bad (newer).")
@click.option(
    "--when",
    "when",
    metavar="PREDICATE",
    help="What 'bad' means: 'spills > 0', 'registers > 168', 'ptx changed', 'compile fails', "
    "any stat name with > >= < <= == != or 'changed'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def bisect(request, variants, out_dir, no_cache, debug, good, bad, when, as_json):
    """Name the first Triton release between --good and --bad where --when holds.

    \b
    irscope bisect k.py --kernel K -s SIG --good 3.5.0 --bad 3.9.0 --when "spills > 0"
    irscope bisect CAPTURE.json --good 3.6.0 --bad 3.9.0 --when "ptx changed"

    Each release tried compiles in its own environment (made once in irscope's cache); a release
    the kernel cannot compile on is skipped and said. Then the first pass that differs between
    the last good release and the first bad one is named.
    """
    from irscope.kernel import inputs
    from irscope.releases import bisect as bisect_mod
    from irscope.views import releases as view
    from irscope.views.progress import reporter

    if not when:
        raise BadInput("give what 'bad' means with --when (e.g. --when 'spills > 0')")
    predicate = bisect_mod.parse_predicate(when)
    if variants:
        raise BadInput("--variant: bisect compiles one kernel under one settings")
    inputs.check_output_dir(out_dir)
    result = bisect_mod.run(
        request,
        good=good,
        bad=bad,
        predicate=predicate,
        out_dir=out_dir,
        use_cache=not no_cache,
        note=view.note,
        progress=reporter(enabled=not as_json),
    )
    if as_json:
        click.echo(view.bisect_json(result))
    else:
        view.bisect_summary(result)
    sys.exit(0 if result.first_bad else 1)
