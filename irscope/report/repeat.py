"""A repeat of `irscope report` answered without building the page again: the cache's direct mode
(compile/direct.py) for the report.

Building the page reads every file of the dump folders, diffs every pass and asks Triton, in a child
process, for the layouts: about a second when nothing changed. A report that succeeded leaves a
record under its request's key (direct.request_key: the command line as typed, the working folder,
the import path, the interpreter, irscope's Python code) in $IRSCOPE_CACHE_DIR/.irscope-direct/, and
a copy of the page beside it. The record holds everything the page was made from:

    folders    every file under each DUMP argument by name, size, mtime, ctime and inode, taken
               before the page was built (a write, a replaced or an added file moves them; the
               page itself is left out when -o puts it inside one of them)
    templates  the page's template, style and script (views/templates), and the files of jinja2
               and markupsafe, which render and escape it
    triton     where the layout child's `import triton` finds it and the installed version
               (direct.triton_state; with --no-layouts the page never asks Triton)
    env        the variables Triton and rich read (direct's watched names) as they were
    page       the page's size and sha256, and the line the command printed

A repeat whose record still holds leaves the output as it is when it has the page's bytes, else
writes the copy in its place (whole, through a temporary file), and prints the line with
"(from cache)". Anything else takes the full path, which builds the page and records it afresh:
a changed, added or removed file, a symlink in a folder (what it points to is not stamped), a
damaged dump the page left out, a file changed lately (cache.changed_lately: its timestamps'
tick could hide a second write), another Triton, jinja2 or template. The stamps are the cache's
own (cache.folder_stamp), as a served dump folder's are. Nothing here
imports Triton, click or jinja2.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from irscope.artifacts import write_whole
from irscope.compile import cache, direct

TEMPLATES = Path(__file__).resolve().parent.parent / "views" / "templates"
RENDERERS = ("jinja2", "markupsafe")


def request(args: list[str]) -> dict[str, Any] | None:
    """The fields of `report DUMP... [-o FILE] [--no-layouts] [--debug]` as typed; None for any other
    form (an unknown flag, `--`, a repeated -o, options run together): the CLI's to read."""
    dumps: list[str] = []
    output: str | None = None
    no_layouts = False
    rest = iter(args)
    for token in rest:
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in ("-o", "--output"):
            if output is not None:
                return None
            output = value if eq else next(rest, None)
            if not output:
                return None
        elif token == "--no-layouts":
            no_layouts = True
        elif token == "--debug":
            continue
        elif token.startswith("-"):
            return None
        else:
            dumps.append(token)
    if not dumps:
        return None
    return fields(dumps, output or "report.html", no_layouts)


def fields(dumps: list[str] | tuple, output: str | Path, no_layouts: bool) -> dict[str, Any]:
    """What identifies a report request (the CLI records under the same fields entry reads)."""
    return {"command": "report", "dumps": [str(Path(d)) for d in dumps], "output": str(Path(output)),
            "no_layouts": bool(no_layouts)}


# ---------------------------------------------------------------- what the page was made from


def _renderer(name: str, search: list[str]) -> list | None:
    spec = PathFinder.find_spec(name, search)
    if spec is None or not spec.origin:
        return None
    return [spec.origin, cache.folder_stamp(Path(spec.origin).parent, skip=("__pycache__",))]


def state(req: dict[str, Any]) -> dict[str, Any] | None:
    """Everything the page of `req` is made from, as it is now (JSON-plain); None when it cannot be
    stamped (the process did not start at irscope.entry, a folder unreadable or holding a symlink)."""
    if direct.START_PATH is None:
        return None
    search = [os.getcwd()] + [p for p in direct.START_PATH if p]   # the layout child runs -m from here
    leave_out = os.path.realpath(req["output"])
    folders = {}
    for dump in req["dumps"]:
        tree = cache.folder_stamp(Path(dump), leave_out, links=False)
        if tree is None:
            return None
        folders[dump] = tree
    doc = {"folders": folders, "templates": cache.folder_stamp(TEMPLATES),
           "renderers": {name: _renderer(name, search) for name in RENDERERS},
           "triton": None if req["no_layouts"] else direct.triton_state(search),
           "env": direct.env_snapshot(sorted(direct.watched_env_names()))}
    return json.loads(json.dumps(doc))


def _page_path(key: str) -> Path:
    return direct.record_path(key).with_suffix(".html")


def remember(req: dict[str, Any], before: dict[str, Any] | None, html: str, line: str) -> None:
    """Record a report that just wrote `html` and printed `line`; `before` is state(req) taken before the
    page was built. Skipped (a slower next run, never a stale one) when anything was written within
    cache.RACY_NS of that stamp or the cache cannot be written."""
    key = direct.request_key(req)
    if key is None or before is None or cache.changed_lately([*before["folders"].values(), before["templates"] or []]):
        return
    data = html.encode("utf-8")
    doc = {"schema": direct.SCHEMA, "state": before, "page": {"size": len(data), "sha256": _sha(data)},
           "line": line}
    try:
        _page_path(key).parent.mkdir(parents=True, exist_ok=True)
        write_whole(_page_path(key), data)
    except OSError:
        return
    direct.write_record(direct.record_path(key), doc)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def serve(req: dict[str, Any]) -> str | None:
    """The line to print when the record of `req` still holds and the page is in place; None otherwise."""
    key = direct.request_key(req)
    if key is None:
        return None
    try:
        doc = json.loads(direct.record_path(key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != direct.SCHEMA or doc.get("state") != state(req):
        return None
    page = doc["page"]
    out = Path(req["output"])
    try:
        now = out.read_bytes() if out.is_file() and out.stat().st_size == page["size"] else None
    except OSError:
        now = None
    if now is None or _sha(now) != page["sha256"]:
        if out.exists() and not out.is_file():
            return None   # the CLI says what is wrong with -o
        try:
            data = _page_path(key).read_bytes()
        except OSError:
            return None
        if _sha(data) != page["sha256"]:
            return None
        try:
            write_whole(out, data, 0o644)
        except OSError:
            return None
    return f"{doc['line']} (from cache)"


def serve_args(args: list[str]) -> bool:
    """irscope.entry's answer to `report ...`: True when the repeat was served (its line printed)."""
    req = request(args)
    try:
        line = serve(req) if req is not None else None
    except Exception:  # noqa: BLE001 - any doubt is the full path's to settle (it says what went wrong)
        return False
    if line is None:
        return False
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return True
