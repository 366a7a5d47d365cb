"""irscope for coding agents: a Model Context Protocol server over the Python API (`irscope mcp --root DIR`).

`workspace` (the root every path is confined to), `paging` (every text a page, with the whole's size),
`tools` (each tool: the paths checked, the API or the command's function called, its JSON view paged),
`server` (the SDK's MCPServer: the tools described with their cost, errors as tool errors, dump folders as
resources). Needs the optional `mcp` package (pip install 'irscope[mcp]'): `require_sdk()` says so in one line.
"""

from __future__ import annotations

import importlib.util

from irscope.errors import BadInput


def require_sdk() -> None:
    """BadInput (one line) when the MCP SDK is not installed."""
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp.server.mcpserver") is None:
        raise BadInput("mcp: the MCP server needs the mcp package (2.x): pip install 'irscope[mcp]'")
