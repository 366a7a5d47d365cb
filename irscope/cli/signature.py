"""`irscope signature`: a kernel's parameters and a --signature template."""

from __future__ import annotations

from pathlib import Path

import click

from irscope.cli.options import LOAD_TIMEOUT_OPTION


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--kernel", "-k", "kernels", multiple=True, metavar="NAME", help="Kernel to show (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@LOAD_TIMEOUT_OPTION
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def signature(file, kernels, as_json, load_timeout, debug):
    """A kernel's parameters (name, constexpr or not, default) and a ready --signature template."""
    from irscope.kernel import inputs, loader, spec
    from irscope.views import signature as view

    loader.set_load_timeout(load_timeout)
    inputs.check_not_spec_file(file)
    (view.print_json if as_json else view.listing)(file, spec.signatures(file, list(kernels)))
