"""Findings: why the compiler did not do what the kernel engineer wanted, with the line, the cause and the fix.

`findings(folder_or_result)` runs every rule (`engine`: one module per kind) over a dump folder and needs no
compile; `to_json(findings)` is the JSON every view, the report and diff use; `explain_dumps` is `irscope
explain` (with --try, `trial`)."""

from __future__ import annotations

from irscope.explain.engine import RULES, findings
from irscope.explain.model import KINDS, Finding, Fix, Where, to_json
from irscope.explain.trial import Trial, explain_dumps

__all__ = ["KINDS", "RULES", "Finding", "Fix", "Trial", "Where", "explain_dumps", "findings", "to_json"]
