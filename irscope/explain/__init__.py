"""Findings: why the compiler did not do what the kernel engineer wanted, with the line, the cause and the fix.

`findings(folder_or_result)` runs every rule (`engine`: one module per kind) over a dump folder and needs no
compile; `to_json(findings)` is the JSON every view, the report and diff use; `trial.explain_dumps` is
`irscope explain` (with --try: each fix recompiled)."""

from __future__ import annotations

from irscope.explain.engine import RULES, findings
from irscope.explain.model import KINDS, Finding, Fix, Where, to_json

__all__ = ["KINDS", "RULES", "Finding", "Fix", "Where", "findings", "to_json"]
