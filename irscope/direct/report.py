"""A repeat of `irscope report` answered without building the page again.

Building the page reads every file of the dump folders, diffs every pass and asks Triton, in a child
process, for the layouts: about a second when nothing changed. A report that succeeded leaves a record
under its command line's key (record.key) and a copy of the page beside it. The record holds the
request as the CLI parsed it (the DUMP folders, -o, --no-layouts) and everything the page was made from:

    folders    every file under each DUMP argument by name, size, mtime, ctime and inode, taken
               before the page was built (a write, a replaced or an added file moves them; the
               page itself is left out when -o puts it inside one of them)
    templates  the page's template, style and script (views/templates), and the files of jinja2
               and markupsafe, which render and escape it
    triton     where the layout child's `import triton` finds it and the installed version
               (record.triton_state; with --no-layouts the page never asks Triton)
    env        the variables Triton and rich read (record's watched names) as they were
    page       the page's size and sha256, and the line the command printed

A repeat whose record still holds leaves the output as it is when it has the page's bytes, else
writes the copy in its place (whole, through a temporary file), and prints the line with
"(from cache)". Anything else takes the full path, which builds the page and records it afresh:
a changed, added or removed file, a symlink in a folder (what it points to is not stamped), a
damaged dump the page left out, a file changed lately (cache.changed_lately: its timestamps'
tick could hide a second write), another Triton, jinja2 or template. The stamps are the cache's
own (cache.folder_stamp), as a served dump folder's are. Nothing here imports Triton, click or jinja2.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, TextIO

from irscope.artifacts import write_whole
from irscope.compile import cache
from irscope.direct import record
from irscope.views import safe  # text from data printed with its control characters shown

TEMPLATES = Path(__file__).resolve().parent.parent / "views" / "templates"
RENDERERS = ("jinja2", "markupsafe")


def request(dumps: list | tuple, output: str | Path, no_layouts: bool) -> dict[str, Any]:
    """The report's request as the CLI parsed it (JSON-plain)."""
    return {"dumps": [str(Path(d)) for d in dumps], "output": str(Path(output)), "no_layouts": bool(no_layouts)}


def _renderer(name: str, search: list[str]) -> list | None:
    spec = PathFinder.find_spec(name, search)
    if spec is None or not spec.origin:
        return None
    return [spec.origin, cache.folder_stamp(Path(spec.origin).parent, skip=("__pycache__",))]


def state(req: dict[str, Any], start_path: list[str]) -> dict[str, Any] | None:
    """Everything the page of `req` is made from, as it is now (JSON-plain); None when it cannot be
    stamped (a folder unreadable or holding a symlink). `start_path`: sys.path as the process started."""
    search = [os.getcwd()] + [p for p in start_path if p]  # the layout child runs -m from here
    leave_out = os.path.realpath(req["output"])
    folders = {}
    for dump in req["dumps"]:
        tree = cache.folder_stamp(Path(dump), leave_out, links=False)
        if tree is None:
            return None
        folders[dump] = tree
    doc = {
        "folders": folders,
        "templates": cache.folder_stamp(TEMPLATES),
        "renderers": {name: _renderer(name, search) for name in RENDERERS},
        "triton": None if req["no_layouts"] else record.triton_state(search),
        "env": record.env_snapshot(sorted(record.watched_env_names())),
    }
    return json.loads(json.dumps(doc))


def _page_path(key: str) -> Path:
    return record.record_path(key).with_suffix(".html")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def remember(key: str, req: dict[str, Any], before: dict[str, Any] | None, html: str, line: str) -> None:
    """Record a report that just wrote `html` and printed `line`; `before` is state(req) taken before the
    page was built. Skipped (a slower next run, never a stale one) when anything was written within
    cache.RACY_NS of that stamp or the cache cannot be written."""
    if before is None or cache.changed_lately([*before["folders"].values(), before["templates"] or []]):
        return
    data = html.encode("utf-8")
    try:
        _page_path(key).parent.mkdir(parents=True, exist_ok=True)
        write_whole(_page_path(key), data)
    except OSError:
        return
    record.write(
        key,
        {
            "command": "report",
            "request": req,
            "state": before,
            "page": {"size": len(data), "sha256": _sha(data)},
            "line": line,
        },
    )


def serve(key: str, doc: dict[str, Any], start_path: list[str], out: TextIO) -> int | None:
    """Print the report's line (and put its page back where it is missing or changed) when its record
    still holds: 0; None otherwise, having printed nothing."""
    req = doc["request"]
    if doc.get("state") != state(req, start_path):
        return None
    page = doc["page"]
    output = Path(req["output"])
    try:
        now = output.read_bytes() if output.is_file() and output.stat().st_size == page["size"] else None
    except OSError:
        now = None
    if now is None or _sha(now) != page["sha256"]:
        if output.exists() and not output.is_file():
            return None  # the CLI says what is wrong with -o
        try:
            data = cache.read_bytes(_page_path(key), int(page["size"]))  # a regular file, not a link
        except (OSError, ValueError, TypeError):
            return None
        if _sha(data) != page["sha256"]:
            return None
        try:
            write_whole(output, data, 0o644)
        except OSError:
            return None
    out.write(f"{safe.text(doc['line'])} (from cache)\n")
    out.flush()
    return 0
