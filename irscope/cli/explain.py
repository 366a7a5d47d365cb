"""`irscope explain`: why the compiler did not do what the kernel engineer wanted: line, cause, fix."""

from __future__ import annotations

import click

from irscope.cli.options import dump_results, spec_options


@click.command()
@spec_options
@click.option("--try", "try_fixes", is_flag=True, help="Recompile with each finding's fix; say whether it went away.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def explain(request, variants, out_dir, no_cache, debug, try_fixes, as_json):
    """Findings: narrow global loads/stores, dots off the tensor cores, loads left out of the pipeline,
    cp.async where TMA was possible, layout conversions through shared memory in loops, spills; each with
    what, where (line, TTGIR op, machine code), why (with the evidence) and the fix.

    \b
    irscope explain DUMP_DIR                  read an earlier dump (no compile)
    irscope explain FILE --signature SIG      compile as dump does, then explain
    irscope explain DUMP_DIR --try            recompile with each fix: did the finding go away?

    FILE is a kernel file (compiled with the same options as dump) or an earlier dump folder.
    """
    from pathlib import Path

    from irscope import artifacts
    from irscope.explain.trial import explain_dumps
    from irscope.kernel.inputs import check_output_dir
    from irscope.views import explain as view

    if request.file.is_dir():
        results = [request.file]
        artifacts.read_manifest(request.file)  # a folder that is no dump: one line, before anything else
        if try_fixes:
            check_output_dir(out_dir)
    else:
        results = dump_results(request, variants, out_dir, no_cache, False)
    items = explain_dumps(results, try_fixes, Path(out_dir))
    if as_json:
        click.echo(view.as_json(items))
    else:
        view.show(items)
