"""`irscope mcp --root DIR`: a Model Context Protocol server on stdio for coding agents (irscope/mcp/)."""

from __future__ import annotations

from pathlib import Path

import click

from irscope.cli.options import LOAD_TIMEOUT_OPTION


@click.command()
@click.option(
    "--root",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="The workspace: the server reads and writes only inside it (kernel files, scripts, dump folders).",
)
@LOAD_TIMEOUT_OPTION
def mcp(root, load_timeout):
    """Serve irscope's tools (dump, stage, passes, lines, explain, diff, capture, sweep, profile, bench) to an MCP
    client over stdio, confined to the workspace ROOT. Needs the mcp package: pip install 'irscope[mcp]'."""
    from irscope import mcp as package

    package.require_sdk()
    from irscope.mcp import server

    server.serve(root, load_timeout)
