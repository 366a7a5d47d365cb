"""Spec files: a kernel, its specialization, target, options and launch, replayable as JSON.

A capture writes one per kernel (`DIR/captures/<kernel>-<n>.json`); a dump's manifest.json reads
as one too. `irscope dump THIS.json --set num_warps=8` recompiles it under other settings
(jobs.resolve reads it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, cast

from irscope.errors import BadInput
from irscope.kernel import jsonfile as schema
from irscope.kernel.jsonfile import Req
from irscope.kernel.spec import KernelSpec
from irscope.records import Launch, Manifest, SpecFile

SPEC_FILE_VERSION: Literal[1] = 1


def spec_document(spec: KernelSpec, target: str, options: dict[str, Any], launch: Launch | None = None) -> SpecFile:
    """A replayable spec: `irscope dump THIS.json` recompiles it under any settings.

    {"irscope_spec": 1, "file", "kernel", "args": {name: element}, "target",
     "options": {...}, "launch": {...}}  — `launch` (grid, tensor shapes) is
    informational for compiling and used by timing.
    """
    return {
        "irscope_spec": SPEC_FILE_VERSION,
        "file": str(spec.file),
        "kernel": spec.kernel,
        "args": {**spec.canonical()},
        "target": target,
        "options": options,
        "launch": launch or {},
    }


# A spec file is checked against the schema derived from its record (schema.of(SpecFile)). An arg is a
# signature element ("*fp32:16", "i32", a constexpr's value: "1024" or 1024).
# A dump's manifest.json read as a spec: the fields a spec takes from it, "file" required (artifacts/schema.py
# checks the whole manifest where a dump folder is read; this layer reads only these).
MANIFEST_AS_SPEC_FIELDS = ("kernel", "target", "args", "user_options")


def manifest_as_spec_schema() -> dict[str, Any]:
    return {**{k: v for k, v in schema.of(Manifest).items() if k in MANIFEST_AS_SPEC_FIELDS}, "file": Req(str)}


def read_spec_document(path) -> SpecFile:
    """Read a spec file (or a dump's manifest.json); one-line errors for anything malformed: not JSON,
    not UTF-8, too deep or a number too long to read, or a field of the wrong type (named)."""
    p = Path(path)
    remedy = "give an irscope spec file (a capture's captures/*.json) or a dump's manifest.json"
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise BadInput(f"{p}: unreadable ({e.strerror or e})") from None
    doc = schema.parse_text(raw, p, "the spec file", remedy)
    if not isinstance(doc, dict):
        raise BadInput(
            f"{p}: expected a JSON object (an irscope spec or a dump manifest), not "
            f"{type(doc).__name__ if doc is not None else 'null'}"
        )
    if "irscope_spec" not in doc and "irscope" in doc:  # a dump folder's manifest
        schema.validate(doc, manifest_as_spec_schema(), p, "manifest.json")
        doc = {
            "irscope_spec": SPEC_FILE_VERSION,
            "file": doc["file"],
            "kernel": doc["kernel"],
            "args": doc.get("args") or {},
            "target": doc["target"],
            "options": doc.get("user_options") or {},
        }
    if doc.get("irscope_spec") != SPEC_FILE_VERSION:
        raise BadInput(f'{p}: not an irscope spec file (expected "irscope_spec": {SPEC_FILE_VERSION})')
    for key in ("file", "kernel", "args"):
        if key not in doc:
            raise BadInput(f"{p}: spec file lacks {key!r}")
    schema.validate(doc, schema.of(SpecFile), p, "spec field", "fix the field, or capture the kernel again")
    if not doc["file"].strip() or "\0" in doc["file"]:
        raise BadInput(f"{p}: spec field file is {doc['file']!r}, not a kernel file's path")
    doc["args"] = {k: str(v) for k, v in doc["args"].items()}
    src = Path(doc["file"])
    if not src.is_absolute():
        src = (p.parent / src).resolve() if (p.parent / src).exists() else src
    doc["file"] = str(src)
    return cast(SpecFile, doc)  # checked against its schema above
