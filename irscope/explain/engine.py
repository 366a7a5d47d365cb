"""Every rule (one module per kind) over one dump folder: the findings, sorted by line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irscope import artifacts
from irscope.explain import access, banks, converts, dots, occupancy, pipeline, spills, tma
from irscope.explain.context import Context
from irscope.explain.model import Finding

RULES = (access.rule, dots.rule, pipeline.rule, tma.rule, converts.rule, spills.rule, occupancy.rule, banks.rule)


def findings(source: Any, manifest: Any = None) -> list[Finding]:
    """The findings of one dump: a folder (path), or anything with `.folder` (a DumpResult, an api Dump)."""
    folder = Path(getattr(source, "folder", source))
    if manifest is None:
        manifest = getattr(source, "manifest", None) or artifacts.read_manifest(folder)
    ctx = Context(folder, manifest)
    if not (manifest.get("stages") or {}).get("ttgir"):
        return []
    out: list[Finding] = []
    for rule in RULES:
        out.extend(rule(ctx))
    return sorted(out, key=lambda f: (f.where.line, f.kind, f.cause))
