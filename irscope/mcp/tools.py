"""What each MCP tool does, as plain functions over a Workspace: the paths checked against it, then the
Python API (irscope.dump, diff, sweep, profile) or the function the command calls (capture, passes,
lines, bench), then the command's own JSON view, paged. Nothing here compiles, diffs or measures by
itself, and nothing prints: each returns the document the CLI's `--json` prints for the same request
(where the CLI has one), with its long texts and lists cut to one page and their sizes said.

Bad input raises irscope's BadInput with the CLI's one-line message; the server (server.py) turns it
into a tool error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from irscope import api, artifacts, jobs, stages
from irscope.artifacts import passes as passes_mod
from irscope.artifacts import sourcemap
from irscope.capture import command as capture_command
from irscope.compile.cache import DumpResult
from irscope.errors import BadInput
from irscope.explain import trial
from irscope.explain.context import Context
from irscope.kernel import inputs
from irscope.mcp import paging
from irscope.mcp.workspace import Workspace
from irscope.timing import bench as bench_job
from irscope.timing.plan import bench_variants
from irscope.views import bench as bench_view
from irscope.views import capture as capture_view
from irscope.views import dump as dump_view
from irscope.views import explain as explain_view
from irscope.views import lines as lines_view
from irscope.views import profile as profile_view
from irscope.views import sweep as sweep_view

# the inputs' types, with what each means in the tools' JSON Schema (the keywords are the Python API's)
Kernel = Annotated[str, Field(description="a kernel file (.py) or a spec file (.json), relative to the workspace root")]
Folder = Annotated[
    str, Field(description="a dump folder: the `folder` a dump returned (relative to the root, or absolute)")
]
Signature = Annotated[
    str | None, Field(description='positional specialization, Triton AOT style: "*fp16:16, *fp16:16, i32:16, 128"')
]
Args = Annotated[Mapping[str, str] | None, Field(description='arguments by name: {"n_elements": "i32:16"}')]
Const = Annotated[Mapping[str, Any] | None, Field(description='constexprs by name: {"BLOCK_SIZE": 1024}')]
Target = Annotated[str | None, Field(description="h100, a100, b200, rtx5090, mi300x, cuda:90, hip:gfx942, ...")]
Sets = Annotated[Mapping[str, Any] | None, Field(description='compile options: {"num_warps": 8, "num_stages": 3}')]
Out = Annotated[str | None, Field(description="output folder inside the workspace (default irscope-out)")]
Line = Annotated[
    str | None, Field(description='a Python line: "33" (the kernel\'s file) or "FILE:LINE" (an inlined helper)')
]
Offset = Annotated[int, Field(description="lines (or rows) to skip: a page's next_offset")]

CONTEXT_LINES = 5  # stage(line=...): lines shown before the first line the Python line became
MAX_AT = 500  # stage(line=...): the stage lines it became, at most this many listed (at_total: all)


def _result(d: api.Dump) -> DumpResult:
    """An API Dump as the dump view renders it (found by the full key when cached: the API has no direct mode)."""
    return DumpResult(d.folder, d.manifest, bool(d.cached), served="cache" if d.cached else "compiled")


def dump(  # noqa: PLR0913
    ws: Workspace,
    kernel: Kernel,
    *,
    name: str | None = None,
    signature: Signature = None,
    args: Args = None,
    const: Const = None,
    target: Target = None,
    set: Sets = None,  # noqa: A002
    recipe: str | None = None,
    variant: str | None = None,
    pin_layout: list[str] | None = None,
    pin_loop: list[str] | None = None,
    pin_partition: list[str] | None = None,
    passes: bool = False,
    out: Out = None,
) -> dict[str, Any]:
    """irscope.dump: `irscope dump KERNEL ... --json`'s document ({"kernels": [one entry]})."""
    d = api.dump(
        str(ws.kernel(kernel)),
        name=name,
        signature=signature,
        args=args,
        const=const,
        target=target,
        set=set,
        recipe=ws.recipe(recipe),
        variant=variant,
        pin_layout=pin_layout or (),
        pin_loop=pin_loop or (),
        pin_partition=pin_partition or (),
        passes=passes,
        out=ws.out(out),
    )
    return json.loads(dump_view.as_json([_result(d)]))


def _dump_folder(ws: Workspace, folder: str) -> tuple[Path, Any]:
    path = ws.folder(folder, "folder")
    return path, artifacts.read_manifest(path)


def stage(
    ws: Workspace,
    folder: Folder,
    stage: Annotated[str, Field(description="ttir, ttgir, llir, ptx, sass, amdgcn, ... (the dump's stages)")],
    *,
    line: Line = None,
    offset: Annotated[int | None, Field(description="lines to skip (default: 0, or just before `line`'s)")] = None,
    limit: int = paging.DEFAULT_LINES,
) -> dict[str, Any]:
    """One stage's text of a dump folder, one page of it; with `line` ("33", "standard.py:43"), the page
    starts CONTEXT_LINES before the first stage line that Python line became, and "at" lists them (the first
    MAX_AT of "at_total")."""
    path, manifest = _dump_folder(ws, folder)
    if stage not in manifest["stages"]:
        raise BadInput(f"stage={stage}: not in this dump; stages: {', '.join(manifest['stages'])}")
    if stage in stages.BINARY:
        text_stages = [s for s in manifest["stages"] if s not in stages.BINARY]
        raise BadInput(f"stage={stage}: a binary, not text; text stages: {', '.join(text_stages)}")
    doc: dict[str, Any] = {"kernel": manifest["kernel"], "target": manifest["target"], "folder": str(path)}
    doc.update(stage=stage, file=str(path / manifest["stages"][stage]))
    start = offset
    if line is not None:
        sourcemap.parse_line_spec(line)
        source_map = sourcemap.load(path, manifest)
        sourcemap.check_stage(source_map, stage)
        entry = sourcemap.find_line(source_map, line, sourcemap.origin_lines(manifest.get("generated_by")))
        at = entry["stages"].get(stage, {}).get("at", [])
        if not at:
            raise BadInput(f"line={line}: became nothing in {stage}; stages it reached: {', '.join(entry['stages'])}")
        doc.update(line=line, source=entry["text"], at=at[:MAX_AT], at_total=len(at))
        start = max(0, at[0] - 1 - CONTEXT_LINES) if offset is None else offset
    text = artifacts.read_stage(path, manifest, stage)
    assert isinstance(text, str), "binary stages are refused above"
    return {**doc, **paging.text_page(text, start or 0, limit)}


def passes(
    ws: Workspace,
    folder: Folder,
    *,
    all: bool = False,  # noqa: A002
    first: str | None = None,
    line: Line = None,
    after: int | None = None,
    offset: Offset = 0,
    limit: int | None = None,
) -> dict[str, Any]:
    """The MLIR passes of a dump made with passes=True: the page of passes that changed the IR (all: every
    pass), which pass first produced IR matching `first`, how Python `line`'s ops changed pass by pass, or
    (after=N) one page of the IR after pass N (offset/limit then count its lines; limit's default: 30 rows,
    200 lines)."""
    if first is not None:
        passes_mod.check_pattern(first)
    if line is not None:
        sourcemap.parse_line_spec(line)
    path = ws.folder(folder, "folder")
    manifest = passes_mod.read_folder(path)
    records, afters, first_ir = passes_mod.load(path, manifest)
    doc: dict[str, Any] = {"kernel": manifest["kernel"], "target": manifest["target"], "folder": str(path)}
    doc.update(total=len(records), changed=sum(r.changed for r in records))
    if after is not None:
        if not 1 <= after <= len(records):
            raise BadInput(f"after={after}: give a pass number from 1 to {len(records)}")
        rec, ir = records[after - 1], afters[after - 1]
        if ir is None:
            raise BadInput(
                f"after={after}: the IR after {rec.name} is not MLIR (translated to LLVM IR); see stage llir"
            )
        return {**doc, "pass": _record(rec), "ir": paging.text_page(ir, offset, limit or paging.DEFAULT_LINES)}
    if first is not None:
        hit = passes_mod.first_producer(first, records, afters, first_ir, passes_mod.stage_texts(path, manifest))
        doc["first"] = {
            "pattern": first,
            "where": hit.where,
            "stage": hit.stage or None,
            "pass": _record(hit.record) if hit.record is not None else None,
            "sources": [{"file": f, "line": n} for f, n in hit.sources],
        }
    if line is not None:
        kernel_file = sourcemap.kernel_file(path, manifest)
        history = passes_mod.line_history(line, kernel_file, records, afters, first_ir)
        doc["line"] = {
            "spec": line,
            "history": [
                {"pass": _record(ch.record) if ch.record else None, "added": ch.added, "removed": ch.removed}
                for ch in history
            ],
        }
    if first is None and line is None:
        doc["passes"] = paging.rows_page(
            [_record(r) for r in records if all or r.changed], offset, limit or paging.DEFAULT_ROWS
        )
    return doc


def _record(rec: Any) -> dict[str, Any]:
    return {
        "index": rec.index,
        "stage": rec.stage,
        "name": rec.name,
        "arg": rec.arg,
        "added": rec.added,
        "removed": rec.removed,
        "file": rec.file,
    }


def lines(
    ws: Workspace,
    folder: Folder,
    *,
    line: Line = None,
    stage: str | None = None,
    sort: str = "instructions",
    offset: Offset = 0,
    limit: int = paging.DEFAULT_ROWS,
) -> dict[str, Any]:
    """`irscope lines DIR --json`: the hot lines (a page of rows, sorted), or one Python line in every stage
    (with `stage`: a page of that stage's lines it became, in "ir")."""
    sourcemap.check_sort(sort)
    if line is not None:
        sourcemap.parse_line_spec(line)
    elif stage is not None:
        raise BadInput("stage: applies with line (which source line's IR to give)")
    path, manifest = _dump_folder(ws, folder)
    source_map = sourcemap.load(path, manifest)
    if line is None:
        rows = sourcemap.hot_lines(source_map, sort)
        doc = json.loads(lines_view.hot_json(path, manifest, source_map, sort, rows, sourcemap.no_line_row(source_map)))
        page = paging.rows_page(doc.pop("lines"), offset, limit)
        return {
            **doc,
            "lines": page["rows"],
            "offset": offset,
            "total": page["total"],
            "next_offset": page["next_offset"],
        }
    sourcemap.check_stage(source_map, stage)
    entry = sourcemap.find_line(source_map, line, sourcemap.origin_lines(manifest.get("generated_by")))
    ir = None
    if stage is not None:
        ir = {stage: sourcemap.stage_lines(path, source_map, stage, entry["stages"].get(stage, {}).get("at", []))}
    doc = json.loads(lines_view.line_json(path, manifest, source_map, entry, ir))
    if stage is not None:
        page = paging.rows_page(doc["ir"][stage], offset, limit)
        doc["ir"] = {stage: page["rows"]}
        doc.update(offset=offset, total=page["total"], next_offset=page["next_offset"])
    return doc


def diff(  # noqa: PLR0913
    ws: Workspace,
    a: Annotated[str, Field(description="dump folder A (the `folder` a dump returned)")],
    b: Annotated[str, Field(description="dump folder B, of the same kernel")],
    *,
    stage: str | None = None,
    raw: bool = False,
    by_line: bool = False,
    context: int = 3,
    offset: Offset = 0,
    limit: int = paging.DEFAULT_LINES,
) -> dict[str, Any]:
    """irscope.diff of two dump folders: `irscope diff A B --json`'s document; with `stage`, one page of that
    stage's unified diff in "stage_diff" (the document's own "diff" fields stay null); with by_line, a page
    of the per-line changes (offset/limit count rows then)."""
    if stage is not None and by_line:
        raise BadInput("stage and by_line: one page at a time; ask for the stage's diff, then the lines")
    if not 0 <= context <= 1000:
        raise BadInput(f"context={context}: give 0 to 1000 lines of context")
    d = api.diff(
        ws.folder(a, "a"), ws.folder(b, "b"), stages=[stage] if stage else (), raw=raw, by_line=by_line, context=context
    )
    doc = d.json
    if stage is not None:
        if stage not in doc["stages"]:
            raise BadInput(f"stage={stage}: not a text stage of either side; stages: {', '.join(doc['stages'])}")
        text = doc["stages"][stage]["diff"] or ""
        doc["stages"][stage]["diff"] = None
        doc["stage_diff"] = {"stage": stage, **paging.text_page(text, offset, limit)}
    if by_line:
        page = paging.rows_page(doc["by_line"], offset, min(limit, paging.MAX_ROWS))
        doc["by_line"] = page["rows"]
        doc["by_line_page"] = {k: page[k] for k in ("offset", "total", "next_offset")}
    return doc


def capture(  # noqa: PLR0913
    ws: Workspace,
    script: Annotated[str, Field(description="a Python script in the workspace; it runs as `python SCRIPT ARGS`")],
    *,
    script_args: list[str] | None = None,
    kernel: list[str] | None = None,
    target: Target = None,
    set: Sets = None,  # noqa: A002
    passes: bool = False,
    compile_only: bool = False,
    time_limit: float | None = None,
    out: Out = None,
    offset: Offset = 0,
    limit: int = paging.DEFAULT_ROWS,
) -> dict[str, Any]:
    """`irscope capture SCRIPT --json`'s document: the script run unmodified (inside the workspace), every
    kernel it compiled dumped; a page of its "kernels" (and of the run's "captures")."""

    path = ws.existing(script, "script", "a Python script")
    inputs.check_request_text(target, (), (), "target=")
    sets = tuple(f"{k}={api._text(v)}" for k, v in (set or {}).items())
    request = jobs.Request(path, tuple(kernel or ()), target=target).with_sets(sets, "--set")
    opts = capture_command.CaptureOptions(
        out_dir=ws.out(out),
        with_passes=passes,
        quiet=True,
        compile_only=compile_only,
        time_limit=time_limit,
    )
    opts, unused = capture_command.check_flags(request, (), opts, as_json=True)
    with capture_command.signals_kept() as stop:
        run = capture_command.run(request, list(script_args or ()), opts, stop)
    found = capture_command.results(run)
    doc = json.loads(capture_view.json_document(run, dump_view.as_json(found)))
    doc["capture"]["exit_status"] = capture_command.exit_status(run, path)
    doc["capture"]["failures"] = [f"capture {c.index} ({c.label}): {c.failure}" for c in run.captures if c.failure]
    doc["capture"]["warning"] = unused
    page = paging.rows_page(doc["kernels"], offset, limit)
    doc["kernels"], doc["kernels_page"] = page["rows"], {k: page[k] for k in ("offset", "total", "next_offset")}
    captures = paging.rows_page(doc["capture"]["captures"], offset, limit)
    doc["capture"]["captures"] = captures["rows"]
    doc["capture"]["captures_page"] = {k: captures[k] for k in ("offset", "total", "next_offset")}
    return doc


def sweep(  # noqa: PLR0913
    ws: Workspace,
    kernel: Kernel,
    grid: Annotated[
        Mapping[str, list[Any] | str],
        Field(description='{"num_warps": [4, 8], "num_stages": "2..4", "BLOCK_M": "16..256:pow2"}'),
    ],
    *,
    name: str | None = None,
    signature: Signature = None,
    args: Args = None,
    const: Const = None,
    target: Target = None,
    set: Sets = None,  # noqa: A002
    recipe: str | None = None,
    variant: str | None = None,
    workers: int | None = None,
    sort: str = "config",
    out: Out = None,
    offset: Offset = 0,
    limit: int = paging.DEFAULT_ROWS,
) -> dict[str, Any]:
    """irscope.sweep (compiles only): `irscope sweep KERNEL --grid ... --json`'s document, a page of its configs."""
    if not grid:
        raise BadInput('grid: give at least one axis, e.g. {"num_warps": [4, 8]}')
    s = api.sweep(
        str(ws.kernel(kernel)),
        grid=grid,
        name=name,
        signature=signature,
        args=args,
        const=const,
        target=target,
        set=set,
        recipe=ws.recipe(recipe),
        variant=variant,
        workers=workers,
        sort=sort,
        out=ws.out(out),
    )
    doc = json.loads(sweep_view.sweep_json(s.configs, s.outcome.result))
    page = paging.rows_page(doc["configs"], offset, limit)
    doc["configs"], doc["configs_page"] = page["rows"], {k: page[k] for k in ("offset", "total", "next_offset")}
    doc["best"] = s.best.label if s.best is not None else None
    return doc


def profile(  # noqa: PLR0913
    ws: Workspace,
    kernel: Kernel,
    *,
    launch: str | None = None,
    grid: str | None = None,
    name: str | None = None,
    signature: Signature = None,
    args: Args = None,
    const: Const = None,
    target: Target = None,
    set: Sets = None,  # noqa: A002
    tool: str = "auto",
    passes: bool = False,
    seed: int = 0,
    out: Out = None,
    offset: Offset = 0,
    limit: int = paging.DEFAULT_ROWS,
) -> dict[str, Any]:
    """irscope.profile (one run on this machine's GPU): profile.json, as `irscope profile --json` prints it,
    with a page of its hot lines. Refused in one line without a GPU, before anything compiles."""
    d = api.profile(
        str(ws.kernel(kernel)),
        launch=launch,
        grid=grid,
        name=name,
        signature=signature,
        args=args,
        const=const,
        target=target,
        set=set,
        tool=tool,
        passes=passes,
        seed=seed,
        out=ws.out(out),
    )
    measured = d.profile
    if measured is None:
        raise BadInput(f"{d.folder}: the profile wrote no profile.json")
    doc = json.loads(profile_view.as_json(measured))
    page = paging.rows_page(doc.get("lines") or [], offset, limit)
    doc["lines"], doc["lines_page"] = page["rows"], {k: page[k] for k in ("offset", "total", "next_offset")}
    doc["folder"] = str(d.folder)
    return doc


def bench(  # noqa: PLR0913
    ws: Workspace,
    kernel: Kernel,
    *,
    launch: str | None = None,
    grid: str | None = None,
    tries: list[str] | None = None,
    name: str | None = None,
    signature: Signature = None,
    args: Args = None,
    const: Const = None,
    target: Target = None,
    set: Sets = None,  # noqa: A002
    seed: int = 0,
    max_seconds: float = 20.0,
) -> dict[str, Any]:
    """`irscope bench KERNEL --args ... --try ... --json`'s document: the variants timed on this machine's GPU
    (interleaved, L2 flushed, with confidence intervals). Refused in one line without a GPU, before any compile."""

    request = api._request(str(ws.kernel(kernel)), name, signature, args, const, target, set, None, None, (), (), ())
    timed, launched = bench_variants(request, (), launch_args=launch, grid=grid, tries=tuple(tries or ()))
    bench_job.require_gpu()  # before the timing process starts: no GPU is one line, nothing started
    session = bench_job.TimingSession()
    try:
        result = bench_job.run(timed, launched, seed=seed, max_seconds=max_seconds, session=session)
    finally:
        session.close()
    return json.loads(bench_view.bench_json(result))


def explain(
    ws: Workspace,
    folder: Folder,
    *,
    try_fixes: Annotated[bool, Field(description="recompile with each finding's fix: did it go away?")] = False,
    out: Out = None,
    offset: Offset = 0,
    limit: int = paging.DEFAULT_ROWS,
) -> dict[str, Any]:
    """`irscope explain DIR --json` (try_fixes: `--try`): the findings of a dump folder (narrow global accesses,
    dots off the tensor cores, loads left out of the pipeline, layout conversions in loops, spills), each with
    its line, cause and fix; a page of them. With try_fixes each fix is recompiled into `out`: the kernel file
    the dump names is code, so it must lie inside the workspace."""
    path, manifest = _dump_folder(ws, folder)
    out_dir = ws.out(out)
    if try_fixes:
        ws.path(Context(path, manifest).kernel_file or manifest["file"], "folder (its kernel file)")
        inputs.check_output_dir(out_dir)
    [(found_in, found_manifest, found, trials)] = trial.explain_dumps([path], try_fixes, out_dir)
    [doc] = json.loads(explain_view.as_json([(found_in, found_manifest, found, trials)]))["dumps"]
    page = paging.rows_page(doc["findings"], offset, limit)
    doc["findings"], doc["findings_page"] = page["rows"], {k: page[k] for k in ("offset", "total", "next_offset")}
    return doc
