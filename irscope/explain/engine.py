"""Every rule (one module per kind) over one dump folder: the findings, sorted by line."""

from __future__ import annotations

from dataclasses import replace
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
    return sorted(_one_per_key(out), key=lambda f: (f.where.line, f.kind, f.cause))


def _one_per_key(found: list[Finding]) -> list[Finding]:
    """One finding per (kind, line, cause): a line whose dot the compiler split in two (fbtriton splits a
    K=32 dot into two of K=16) or that has two such loads is one problem with one fix. The first stands,
    with the TTGIR ops and instructions of the others added to its evidence."""
    merged: dict[tuple[str, int, str], Finding] = {}
    for f in found:
        first = merged.get(f.key)
        if first is None:
            merged[f.key] = f
            continue
        where = replace(
            first.where,
            ttgir=first.where.ttgir + [t for t in f.where.ttgir if t not in first.where.ttgir],
            machine=first.where.machine + [m for m in f.where.machine if m not in first.where.machine],
        )
        merged[f.key] = replace(first, where=where)
    return list(merged.values())
