"""The MCP server: the tools of tools.py under the SDK's MCPServer, each described with what it costs,
its typed inputs named as the Python API's keywords, its result the command's JSON (structured output);
irscope's bad input and compile failures become tool errors (isError) carrying the CLI's one line.

Dump folders inside the workspace are resources: `irscope://dump/<folder>` is the folder's manifest.json
and `irscope://dump/<folder>/<file>` one of its text files, a page at a time (`?offset=N` lines). The ones
found under the root at start and every one a tool writes are listed.

One request runs at a time, on the server's own thread (the tools are async functions that do their work
in place): a kernel file's import and a script's time limit keep their signal-based limits, and no two
compiles share Triton's process state.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from irscope import artifacts
from irscope.errors import BadInput, IrscopeError
from irscope.kernel import loader
from irscope.mcp import paging, tools
from irscope.mcp.workspace import Workspace
from irscope.version import __version__

INSTRUCTIONS = """irscope shows what the Triton compiler makes of a GPU kernel: every stage (TTIR, TTGIR, LLVM IR,
PTX, SASS / AMDGCN), the MLIR passes, what each Python line became, and diffs of two compiles. Start with
`dump` (a kernel file and its signature, a target such as h100 or mi300x, compile options in `set`); ask
`explain` why it is slow; read its folder with `stage`, `lines` and `passes`; compare two dumps with `diff`. Paths are relative to the workspace
root; long texts come a page at a time (offset / next_offset, with the total size said)."""

COMPILE = "Cost: one Triton compile (seconds; a repeat of the same request is served from irscope's cache)."
READ = "Cost: reads a dump folder; no compile."
SPEC = (
    "kernel: a kernel file (.py) with signature/args/const, or a spec file (.json: a capture's "
    "captures/KERNEL-N.json or a dump's manifest.json). signature: positional, Triton AOT style, "
    '"*fp16:16, *fp16:16, i32:16, 1024" (a pointer *DTYPE[:16 aligned], a scalar i32[:16 divisible / :1 equal '
    'to 1], a constexpr value). args/const: by name, {"n_elements": "i32:16"} / {"BLOCK_SIZE": 1024}. '
    'target: h100, a100, b200, mi300x, cuda:90, hip:gfx942, ... set: compile options {"num_warps": 8, '
    '"num_stages": 3}. out: the output folder inside the workspace (default irscope-out).'
)

DESCRIPTIONS = {
    "dump": f"Compile one kernel for one specialization and settings and lay out every stage: what "
    f"`irscope dump --json` prints (the dump folder, options, stats: registers, spills, shared memory, "
    f"occupancy, access widths, instruction mix; each stage's file). passes=true also records the IR after "
    f"every MLIR pass (for the passes tool). {SPEC} {COMPILE}",
    "stage": f"One stage's text (ttir, ttgir, llir, ptx, sass, amdgcn, ...) of a dump folder, one page of "
    f"lines; line=33 (or FILE:LINE) starts the page just before what that Python line became there and "
    f"lists those stage lines in `at`. {READ}",
    "passes": f"The MLIR passes of a dump made with passes=true: which passes changed the IR (+/- lines), "
    f"which pass first produced IR matching a regex (first), how a Python line's ops changed pass by pass "
    f"(line), or one page of the IR after pass N (after). {READ}",
    "lines": f"What each Python line became, from the dump's source map (`irscope lines --json`): the hot "
    f"lines, most machine instructions first (sort: instructions, spills, mma, global_load, ...), a page "
    f"of rows; or line=N in every stage (ops, instruction classes, spills, layouts), with stage= the stage's "
    f"lines it became. {READ}",
    "diff": "Compare two dump folders of one kernel (`irscope diff A B --json`): what went in differently, "
    "stats that changed, each stage's status and +/- lines after normalisation, where the passes first "
    "diverge; stage= gives a page of that stage's unified diff, by_line=true a page of per-line changes. "
    "Cost: reads two dumps and diffs them (a second or two for big kernels); no compile.",
    "explain": f"Why the compiler did not do what a kernel engineer wants, read from a dump folder "
    f"(`irscope explain DIR --json`): narrow global loads/stores, dots off the tensor cores, loads left out of "
    f"the pipeline, layout conversions through shared memory in loops, spills; each finding with its Python "
    f"line, cause and fix (a signature, const or set change). {READ} try_fixes=true recompiles with each fix "
    f"and says whether the finding went away (cost: one compile per fix).",
    "capture": "Run a Python script of the workspace unmodified (it is code: it runs as `python SCRIPT`) "
    "and dump every Triton kernel it compiles (`irscope capture --json`). Without a GPU, or for another "
    "target, kernels are compiled for the target and launches recorded, not run (tensors live on the CPU; "
    "needs torch). script_args: the script's argv; kernel: name globs; time_limit: seconds. Cost: the "
    "script's own run plus one compile per kernel and config (seconds to minutes).",
    "sweep": f"Compile every config of a grid of compile options or constexprs and rank them by static stats "
    f'(`irscope sweep --grid ... --json`, no timing). grid: {{"num_warps": [4, 8], "num_stages": "2..4"}}; '
    f"workers: compile processes. {SPEC} Cost: one compile per config, in parallel (seconds to minutes).",
    "profile": f"Run the kernel once on this machine's GPU under Nsight Compute (or Proton) and join what it "
    f"measured to the Python lines: hot lines, stall reasons, bytes, the roofline point (profile.json). "
    f'launch: the arguments, "x=randn(4096, fp32), n=4096"; grid: "cdiv(n, BLOCK)". {SPEC} Cost: a compile '
    f"and a GPU run under the profiler (tens of seconds). Refused in one line without a GPU.",
    "bench": f"Time variants of a kernel on this machine's GPU, interleaved and L2-flushed, with confidence "
    f'intervals (`irscope bench --json`). launch/grid as for profile; tries: ["num_warps=8", "num_stages=4"], '
    f"each a variant on the baseline. {SPEC} Cost: a compile per variant and GPU runs for up to max_seconds. "
    f"Refused in one line without a GPU.",
}

# what a host may tell its user before a call: the readers only read; the rest write dump folders (or a GPU
# run) inside the workspace and never delete anything; a repeat of dump or sweep gives the same folders
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
ANNOTATIONS = {
    "dump": WRITES,
    "stage": READS,
    "passes": READS,
    "lines": READS,
    "explain": WRITES,  # try_fixes compiles into out
    "diff": READS,
    "capture": RUNS,
    "sweep": WRITES,
    "profile": RUNS,
    "bench": RUNS,
}


def build(root: str | os.PathLike[str]) -> MCPServer:
    """The server for the workspace `root` (BadInput when it is not a folder)."""
    ws = Workspace.at(root)
    server: MCPServer = MCPServer("irscope", instructions=INSTRUCTIONS, version=__version__)
    listed: set[Path] = set()

    def list_folder(folder: Path) -> None:
        if folder in listed or not (folder / artifacts.MANIFEST).is_file():
            return
        listed.add(folder)
        rel = folder.relative_to(ws.root).as_posix()
        server.add_resource(
            FunctionResource(
                uri=f"irscope://dump/{rel}",
                name=rel,
                description=f"the dump folder {rel}: its manifest.json (what was compiled, options, stats, stages)",
                mime_type="application/json",
                fn=functools.partial(read_resource, ws, rel, 0),
            )
        )

    for name, description in DESCRIPTIONS.items():
        tool = _tool(getattr(tools, name), ws, list_folder)
        server.add_tool(tool, name=name, description=description, annotations=ANNOTATIONS[name])

    @server.resource("irscope://dump/{+path}{?offset}", mime_type="text/plain")
    def dump_file(path: str, offset: int = 0) -> str:
        """A dump folder's manifest.json, or one text file of a dump folder, a page of lines at a time."""
        try:
            return read_resource(ws, path, offset)
        except BadInput as e:
            raise ResourceError(f"irscope: error: {e}") from None

    for folder in _dump_folders(ws.root):
        list_folder(folder)
    return server


def serve(root: str | os.PathLike[str], load_timeout: float | None = None) -> None:
    """Serve the workspace `root` over stdio until the client goes away, from the root (a kernel file's or
    script's relative paths mean what they mean for a user working there); `load_timeout`: the limit on
    importing a kernel file (the CLI's --load-timeout)."""
    built = build(root)
    if load_timeout is not None:
        loader.set_load_timeout(load_timeout)
    os.chdir(Workspace.at(root).root)
    built.run("stdio")


def _tool(fn: Callable[..., dict[str, Any]], ws: Workspace, list_folder: Callable[[Path], None]) -> Callable:
    """fn(ws, ...) as an MCP tool: its signature without ws; its document as structured content (and as
    compact JSON text, for clients that read only text); irscope's bad input and compile failures as a tool
    error whose text is the CLI's line, exactly; the dump folders it wrote listed as resources."""
    signature = inspect.signature(fn, eval_str=True)
    params = list(signature.parameters.values())[1:]

    @functools.wraps(fn)
    async def call(**kwargs: Any) -> CallToolResult:
        try:
            doc = fn(ws, **kwargs)
        except IrscopeError as e:
            return _refused(f"irscope: error: {e}")
        except Exception as e:  # an irscope bug: one line, as the CLI says it
            logging.getLogger(__name__).exception("irscope mcp: %s failed", fn.__name__)
            return _refused(f"irscope: internal error: {type(e).__name__}: {e}")
        for folder in _folders_in(doc):
            path = Path(folder)
            if ws.root in path.parents:
                list_folder(path)
        text = json.dumps(doc, separators=(",", ":"), default=str)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=doc)

    # what the SDK reads: the inputs, and a structured result (the document)
    call.__signature__ = signature.replace(parameters=params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    return call


def _refused(line: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _folders_in(doc: dict[str, Any]) -> list[str]:
    """The dump folders a tool's document names (dump, capture, profile: "folder"; sweep: each config's)."""
    found = [k.get("folder") for k in doc.get("kernels") or []] + [doc.get("folder")]
    found += [c.get("folder") for c in doc.get("configs") or [] if isinstance(c, dict)]
    return [f for f in found if isinstance(f, str)]


def _dump_folders(root: Path, depth: int = 4, most: int = 500) -> list[Path]:
    """Dump folders under the root (a manifest.json in them), at most `depth` folders down and `most` of
    them, hidden folders skipped: what the server lists at start."""
    found: list[Path] = []
    level = [root]
    for _ in range(depth + 1):
        nxt = []
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                    continue
                path = Path(e.path)
                if (path / artifacts.MANIFEST).is_file():
                    found.append(path)
                    if len(found) >= most:
                        return found
                else:
                    nxt.append(path)
        level = nxt
    return found


def read_resource(ws: Workspace, path: str, offset: int = 0) -> str:
    """The text behind irscope://dump/PATH: a dump folder's manifest.json, or a text file inside a dump
    folder; one page (paging.text_page), and when it is not the whole file a last line says which lines
    these are of how many, and the URI of the next page."""
    target = ws.path(path, "path")
    folder = target if target.is_dir() else target.parent
    while folder != ws.root and not (folder / artifacts.MANIFEST).is_file():
        folder = folder.parent
    if not (folder / artifacts.MANIFEST).is_file():
        raise BadInput(f"path={path}: not in a dump folder of the workspace")
    file = target / artifacts.MANIFEST if target.is_dir() else target
    rel = file.relative_to(folder).as_posix()
    text = artifacts.read_text(folder, rel, "path")
    page = paging.text_page(text, offset, paging.MAX_LINES)
    if page["offset"] == 0 and page["next_offset"] is None:
        return page["text"]
    end = page["offset"] + page["lines"]
    tail = f"[irscope: lines {page['offset'] + 1}-{end} of {page['total_lines']} ({page['total_chars']} characters)"
    if page["next_offset"] is not None:
        tail += f"; next: irscope://dump/{path}?offset={page['next_offset']}"
    return page["text"] + tail + "]\n"
