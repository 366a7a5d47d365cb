"""Serving a repeat from its record: the dumps restored from the cache, a dump's summary rendered from them
by the dump view (derived, never replayed), the output of passes, lines and diff to a pipe as the full run
printed it (the record's MAC checked, control characters shown), or a report's page; nothing parsed,
nothing imported that the record does not need.

A record is data even with a valid MAC (docs/guides/threat-model.md, "The cache and whom it trusts"): its command's exit status must be one the command
gives (STATUSES), its entries digests, a folder it placed exactly where that entry's dump belongs."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from irscope.compile import cache
from irscope.direct import record, report
from irscope.direct.recorder import Recorder
from irscope.errors import IrscopeError
from irscope.views import safe  # text from data printed with its control characters shown

if TYPE_CHECKING:
    from irscope.records import Manifest

# the exit statuses a command's own rules give (dump: 0; passes: 1 when --first finds nothing; diff: 1 when
# the sides differ): a record's status is served only when it is one of them
STATUSES = (("dump", (0,)), ("passes", (0, 1)), ("lines", (0,)), ("diff", (0, 1)))


# how a terminal renders what was served (passes, lines): (command, [(folder, manifest)], view, stream) -> status
Terminal = Callable[[str, list, dict, TextIO], int]


def serve(recorder: Recorder, out: TextIO, terminal: Terminal | None = None) -> int | None:
    """Answer the recorder's command line from its record, writing to `out`: its exit status; None (nothing
    written) when there is no record or anything it depended on changed: the CLI's full path then runs."""
    key = recorder.key()
    if key is None:
        return None
    doc = record.read(key)
    if doc is None:
        return None
    try:
        if doc.get("command") == "report":
            return report.serve(key, doc, recorder.path, out)
        if not _well_formed(doc) or not _servable(doc, out, terminal):
            return None
        fresh = record.holds(doc)
        if fresh is None:
            return None
        if fresh[0] or fresh[1]:  # the same content under a new stat: written back, so the next run is stat-only
            doc["files"].update(fresh[0])
            doc["dirs"].update(fresh[1])
            record.write(key, doc)
        served = place(key, doc, Path(doc["out"]))
    except Exception:  # noqa: BLE001 - any doubt is the full path's to settle (it says what went wrong)
        return None
    if served is None:
        return None
    return _render(
        doc,
        [cache.DumpResult(folder, manifest, cached=True, key=k, served="direct") for folder, manifest, k in served],
        out,
        terminal,
    )


def _well_formed(doc: dict[str, Any]) -> bool:
    """A record irscope could have written: a command it serves, that command's status, one entry or
    more (each a digest), the summary text or none, the view an object."""
    command, status = doc.get("command"), doc.get("status")
    if type(status) is not int or (command, status) not in [(c, s) for c, codes in STATUSES for s in codes]:
        return False
    entries = doc.get("entries")
    if not isinstance(entries, list) or not entries or not isinstance(doc.get("view"), dict):
        return False
    if not all(isinstance(e, dict) and isinstance(e.get("edit"), dict) for e in entries):
        return False
    try:
        [cache.check_key(e.get("key")) for e in entries]
    except cache.Damaged:
        return False
    return isinstance(doc.get("out"), str) and isinstance(doc.get("summary"), (str, type(None)))


def _servable(doc: dict[str, Any], out: TextIO, terminal: Terminal | None) -> bool:
    if not out.isatty():
        return doc.get("summary") is not None or bool(doc["view"].get("json"))
    if doc.get("pipe_only"):
        return False  # a diff's layout follows a terminal's width
    return doc["command"] == "dump" or terminal is not None


def _render(doc: dict[str, Any], results: list, out: TextIO, terminal: Terminal | None) -> int:
    command, view, status = doc["command"], doc["view"], doc["status"]
    if command == "dump" and view.get("json"):
        from irscope.views import dump as dump_view

        out.write(dump_view.as_json(results) + "\n")
        if any(r.manifest.get("pins") for r in results):
            dump_view.warn_pins_without_effect(results)
    elif command == "dump":  # derived, not replayed: the served folders' manifests through the dump view
        from irscope.views import dump as dump_view
        from irscope.views.console import console

        dump_view.summary(results, out=console(file=out))
    elif not out.isatty():  # passes, lines, diff to a pipe: the output as this user's irscope printed it
        out.write(safe.text(doc["summary"]))
    elif terminal is not None:
        try:
            status = terminal(command, [(r.folder, r.manifest) for r in results], view, out)
        except IrscopeError as e:  # as cli.main says it (what rendered before it stays printed)
            out.flush()
            sys.stderr.write(f"irscope: error: {e}\n")
            return e.exit_code
    out.flush()
    return status


def place(key: str, doc: dict[str, Any], out_dir: Path) -> list[tuple[Path, Manifest, str]] | None:
    """Copy every entry the record names to its folder under out_dir: [(folder, manifest, key)].

    A folder that neither it nor its entry changed since an earlier serve checked it (cache.placed_stamp,
    kept in the record) is served as it is, without reading the checksums again. None when an entry is
    gone or damaged: the command then takes the full path, which says so, drops the entry and recompiles.
    """
    out = []
    stamped = False
    for item in doc["entries"]:
        entry, stamp = item["key"], {k: v for k, v in item["edit"].items() if k in record.EDITED}
        placed = item.get("placed") or {}
        if placed.get("out") == str(out_dir) and isinstance(placed.get("folder"), str):
            manifest = cache.still_placed(entry, Path(placed["folder"]), placed.get("stamp"))
            if manifest is not None and _placed_right(out_dir, entry, Path(placed["folder"]), manifest):
                out.append((Path(placed["folder"]), manifest, entry))
                continue

        def edit(manifest: Manifest, stamp=stamp) -> Manifest:
            manifest.update(stamp)
            return manifest

        try:
            hit = cache.restore(entry, functools.partial(_folder, out_dir, entry), edit)
        except cache.Damaged:
            return None
        if hit is None:
            return None
        item["placed"] = {"out": str(out_dir), "folder": str(hit[0]), "stamp": cache.placed_stamp(entry, hit[0])}
        stamped = stamped or item["placed"]["stamp"] is not None
        out.append((hit[0], hit[1], entry))
    if stamped:
        record.write(key, doc)
    return out


def _placed_right(out_dir: Path, entry: str, folder: Path, manifest: Manifest) -> bool:
    """Whether `folder` holds this entry's kernel and target and is where the entry's dump goes under out_dir
    (a record's folder is data too: one naming another dump is not served in this entry's place)."""
    try:
        own = cache.lookup(entry)
        if own is None or any(manifest.get(k) != own[k] for k in ("kernel", "target")):
            return False
        return folder == _folder(out_dir, entry, own)
    except (cache.Damaged, KeyError, TypeError):
        return False


def _folder(out_dir: Path, entry: str, manifest: Manifest) -> Path:
    return cache.folder_for(out_dir, manifest, entry)
