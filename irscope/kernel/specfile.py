"""Spec files: a kernel, its specialization, target, options and launch, replayable as JSON.

A capture writes one per kernel (`DIR/captures/<kernel>-<n>.json`); a dump's manifest.json reads
as one too. `irscope dump THIS.json --set num_warps=8` recompiles it under other settings
(jobs.resolve reads it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from irscope.errors import BadInput
from irscope.kernel.spec import KernelSpec

SPEC_FILE_VERSION = 1


def spec_document(spec: KernelSpec, target: str, options: dict[str, Any], launch: dict | None = None) -> dict:
    """A replayable spec: `irscope dump THIS.json` recompiles it under any settings.

    {"irscope_spec": 1, "file", "kernel", "args": {name: element}, "target",
     "options": {...}, "launch": {...}}  — `launch` (grid, tensor shapes) is
    informational for compiling and used by timing.
    """
    return {
        "irscope_spec": SPEC_FILE_VERSION,
        "file": str(spec.file),
        "kernel": spec.kernel,
        "args": spec.canonical(),
        "target": target,
        "options": options,
        "launch": launch or {},
    }


def read_spec_document(path) -> dict:
    """Read a spec file (or a dump's manifest.json); one-line errors for anything malformed."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise BadInput(f"{p}:{e.lineno}: not valid JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{p}: expected a JSON object (an irscope spec or a dump manifest)")
    if "irscope_spec" not in doc and "irscope" in doc:  # a dump folder's manifest
        doc = {"irscope_spec": SPEC_FILE_VERSION, "file": doc["file"], "kernel": doc["kernel"],
               "args": doc.get("args") or {}, "target": doc["target"], "options": doc.get("user_options") or {}}
    if doc.get("irscope_spec") != SPEC_FILE_VERSION:
        raise BadInput(f"{p}: not an irscope spec file (expected \"irscope_spec\": {SPEC_FILE_VERSION})")
    for key in ("file", "kernel", "args"):
        if key not in doc:
            raise BadInput(f"{p}: spec file lacks {key!r}")
    src = Path(doc["file"])
    if not src.is_absolute():
        src = (p.parent / src).resolve() if (p.parent / src).exists() else src
    doc["file"] = str(src)
    return doc
