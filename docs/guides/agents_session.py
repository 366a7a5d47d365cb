"""The session docs/guides/agents.md shows: an MCP client starts `irscope mcp --root WORKSPACE` over stdio,
as an agent's host does, and makes the calls an agent makes to find why a kernel is slow and to verify a fix.

    PYTHONPATH=. python docs/guides/agents_session.py > /tmp/session.md

The workspace is a fresh folder holding a copy of examples/vector_add.py; its path is written `<root>` in the
output. Each request is printed as sent; each response is the server's structured result, cut to the fields
named under it (the full documents are `irscope ... --json`'s).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
SLOW = "*fp32, *fp32, *fp32, i32, 1024"  # n_elements: an i32 of which nothing is known
FIXED = "*fp32, *fp32, *fp32, i32:16, 1024"  # n_elements divisible by 16, as Triton's launcher specializes it


def pick(doc: Any, *paths: str) -> dict[str, Any]:
    """The fields at dotted paths ("kernels.0.stats.ptx.global_load") of a document."""
    out: dict[str, Any] = {}
    for path in paths:
        value = doc
        for part in path.split("."):
            value = value[int(part)] if isinstance(value, list) else value.get(part)
            if value is None:
                break
        out[path] = value
    return out


class Transcript:
    def __init__(self, client: Client, root: Path):
        self.client, self.root = client, str(root)

    def say(self, text: str) -> None:
        print(text.replace(self.root, "<root>") + "\n")

    async def call(self, name: str, args: dict[str, Any], *fields: str, text: str | None = None) -> Any:
        result = await self.client.call_tool(name, args)
        sent = json.dumps(args, indent=1).replace(self.root, "<root>")
        print(f"**→ `{name}`**\n\n```json\n{sent}\n```\n")
        doc = result.structured_content
        if result.is_error:
            shown = result.content[0].text
        else:
            shown = json.dumps(pick(doc, *fields), indent=1)
            if text is not None:
                shown += "\n" + str(pick(doc, text)[text])
        print(
            f"**←** {'error' if result.is_error else 'result (the fields shown)'}\n\n```\n{shown.replace(self.root, '<root>')}\n```\n"
        )
        return doc


async def session(root: Path) -> None:
    env = {"PYTHONPATH": str(REPO), **{k: v for k, v in os.environ.items() if k.startswith("IRSCOPE_")}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "irscope", "mcp", "--root", str(root)], env=env)
    async with Client(params) as client:
        t = Transcript(client, root)
        tools = (await client.list_tools()).tools
        t.say("The agent lists the tools: " + ", ".join(f"`{x.name}`" for x in tools) + ".")
        t.say("It dumps the kernel as the user launches it, for an H100:")
        slow = await t.call(
            "dump",
            {"kernel": "vector_add.py", "signature": SLOW, "target": "h100", "out": "slow"},
            "kernels.0.folder",
            "kernels.0.stats.registers",
            "kernels.0.stats.ptx.global_load",
            "kernels.0.stats.ptx.global_store",
            "kernels.0.stats.sass.classes.global_load",
            "kernels.0.stats.sass.instructions",
        )
        a = slow["kernels"][0]["folder"]
        t.say("A memory-bound kernel that issues 16 32-bit loads per thread. It asks why:")
        found = ("kind", "cause", "what", "where.line", "where.text", "why", "fix.text", "fix.args")
        await t.call(
            "explain", {"folder": a}, *[f"findings.{i}.{k}" for i in (0, 2) for k in found], "findings_page.total"
        )
        t.say("It reads the PTX that line 15 became, to see it for itself:")
        await t.call(
            "stage",
            {"folder": a, "stage": "ptx", "line": "15", "limit": 16},
            "at",
            "offset",
            "lines",
            "total_lines",
            "next_offset",
            text="text",
        )
        t.say(
            "Each element is loaded on its own, a 32-bit `ld.global.b32` behind its own predicate: the pointers "
            "are 16-byte aligned (a bare `*fp32` is, as Triton's launcher assumes for a torch tensor), but nothing "
            "says that `n_elements` is a multiple of 16, so the mask `offsets < n_elements` may cut through a "
            "thread's 4 contiguous elements. It applies the fix the findings name, `n_elements` as `i32:16` (the "
            "specialization Triton's launcher makes when n is divisible by 16), and dumps again:"
        )
        fixed = await t.call(
            "dump",
            {"kernel": "vector_add.py", "signature": FIXED, "target": "h100", "out": "fixed"},
            "kernels.0.folder",
            "kernels.0.stats.ptx.global_load",
            "kernels.0.stats.sass.classes.global_load",
            "kernels.0.stats.sass.instructions",
        )
        b = fixed["kernels"][0]["folder"]
        t.say("It asks again:")
        await t.call("explain", {"folder": b}, "findings", "findings_page.total")
        t.say("and verifies the fix with a diff of the two dumps, the PTX's diff a page at a time:")
        await t.call(
            "diff",
            {"a": a, "b": b, "stage": "ptx", "limit": 25},
            "equal",
            "inputs",
            "stats",
            "stage_diff.total_lines",
            "stage_diff.next_offset",
            text="stage_diff.text",
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="irscope-agent-") as tmp:
        root = Path(tmp)
        shutil.copy(REPO / "examples" / "vector_add.py", root / "vector_add.py")
        anyio.run(session, root)


if __name__ == "__main__":
    main()
