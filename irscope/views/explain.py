"""The explain command's view (and the "findings" block of dump's summary): each finding's what, where, why
and fix, and with --try whether the fix took it away. Formats what irscope.explain found; computes nothing.

JSON (schema "irscope_explain": 1): {"irscope_explain": 1, "dumps": [{"kernel", "target", "folder",
  "findings": [FINDING], "tried": [TRIAL]}]}
  FINDING = {"kind", "cause", "what", "where": {"file", "line", "text", "ttgir": [..], "machine": [..]},
             "why", "evidence": [..], "fix": {"text", "args", "sets", "consts", "tryable"}}
  TRIAL = {"finding": [kind, line, cause], "fix", "folder", "gone", "after": [FINDING]}
"""

from __future__ import annotations

import json
import re
from typing import Any

from irscope.views.console import console, esc

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _safe(text: object) -> str:
    """Text from a dump folder (source lines, IR) as data: control characters shown as '?', markup escaped."""
    return esc(_CONTROL.sub("?", str(text)))


def block(found: list, folder: object, indent: str = "  ") -> list[str]:
    """The short "findings" block of dump's summary: one line a finding (irscope explain FOLDER for the rest)."""
    if not found:
        return [f"{indent}findings   none"]
    out = [f"{indent}findings   {len(found)} (why, and the fix: irscope explain {_safe(folder)})"]
    for f in found:
        at = f"line {f.where.line:<4}" if f.where.line else "no line  "
        out.append(f"{indent}  {at} {_safe(f.kind)} ({_safe(f.cause)}): {_safe(f.what)}")
    return out


def show(items: list, out=None) -> None:
    """Each (folder, manifest, findings, trials) in full."""
    con = console(file=out)
    for folder, manifest, found, trials in items:
        con.print(f"{_safe(manifest['kernel'])}  {_safe(manifest['target'])}  {_safe(folder)}")
        if not found:
            con.print("  no findings")
        tried = {t.finding.key: t for t in trials}
        for i, f in enumerate(found, 1):
            at = f"at line {f.where.line}: {_safe(f.where.text)}" if f.where.line else "(no one line)"
            con.print(f"\n  [bold]{i}. {_safe(f.kind)}[/bold] ({_safe(f.cause)}) {at}")
            con.print(f"     what   {_safe(f.what)}")
            con.print(f"     why    {_safe(f.why)}")
            for e in f.evidence:
                con.print(f"            - {_safe(e)}")
            for t in f.where.ttgir[:2]:
                con.print(f"     ttgir  {_safe(t)}")
            for t in f.where.machine[:3]:
                con.print(f"     code   {_safe(t)}")
            con.print(f"     fix    {_safe(f.fix.text)}")
            if f.key in tried:
                t = tried[f.key]
                verdict = "went away" if t.gone else "did NOT go away"
                con.print(f"     tried  {verdict} ({_safe(t.folder)})")


def as_json(items: list) -> str:
    return json.dumps(
        {
            "irscope_explain": 1,
            "dumps": [_dump_doc(folder, manifest, found, trials) for folder, manifest, found, trials in items],
        },
        indent=1,
    )


def _dump_doc(folder: Any, manifest: Any, found: list, trials: list) -> dict[str, Any]:
    return {
        "kernel": manifest["kernel"],
        "target": manifest["target"],
        "folder": str(folder),
        "findings": [f.to_json() for f in found],
        "tried": [t.to_json() for t in trials],
    }
