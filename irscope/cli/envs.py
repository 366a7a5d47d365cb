"""`irscope envs`: the Triton environments irscope made for diff-releases and bisect, listed and removed.

Parsing only: the listing and the removal are releases/inventory.py's, the output views/envs.py's.
"""

from __future__ import annotations

import click


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
@click.pass_context
def envs(ctx, as_json):
    """List the Triton environments irscope made (release, size, when made and last used, path).

    \b
    diff-releases and bisect make one per Triton release they need (about 60 s and
    0.9 GB each, in irscope's cache folder) and reuse it afterwards.
    irscope envs remove 3.8.0        remove one (fbtriton==3.7.4 for the fork)
    irscope envs remove --all        remove all of them
    """
    if ctx.invoked_subcommand is not None:
        return
    from irscope.releases import inventory
    from irscope.views import envs as view

    inv = inventory.listed()
    if as_json:
        click.echo(view.inventory_json(inv))
    else:
        view.table(inv)


@envs.command()
@click.argument("releases", nargs=-1, metavar="[RELEASE]...")
@click.option("--all", "every", is_flag=True, help="Remove every environment irscope made.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def remove(releases, every, as_json):
    """Remove the environments of these releases (3.8.0, fbtriton==3.7.4), or --all of them."""
    from irscope.releases import inventory
    from irscope.views import envs as view

    gone, leftovers = inventory.remove(tuple(releases), every)
    if as_json:
        click.echo(view.removed_json(gone, leftovers))
    else:
        view.removed(gone, leftovers)
