"""The lines command's views (and `dump --lines`): the hot-lines table, one line in every stage,
and their JSON. Everything here formats what artifacts.sourcemap read or found; nothing is computed.

JSON (schema "irscope_lines": 1):
  hot lines  {"irscope_lines": 1, "kernel", "target", "folder", "machine", "sort",
              "lines": [ROW], "no_line": ROW}
             ROW = {"file", "line", "text", "instructions", <class>: n, "spills" (bytes), "regs",
                    "convert_layouts", "layouts", "ptx", "ttgir_ops"}
  --line     {"irscope_lines": 1, "kernel", "target", "folder", "machine",
              "line": ENTRY (map.json's entry: file, line, text, stages, callees),
              "ir": {stage: [{"line", "text"}]} (with --stage)}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from irscope import stages
from irscope.artifacts.sourcemap import CLASSES
from irscope.records import Manifest, SourceMap
from irscope.views import safe
from irscope.views.console import console, esc

SHORT = {
    "mma": "mma",
    "global_load": "gld",
    "global_store": "gst",
    "shared_load": "sld",
    "shared_store": "sst",
    "async_copy": "async",
    "tma": "tma",
    "local_load": "lld",
    "local_store": "lst",
    "barrier": "bar",
}


def _where(row: dict[str, Any], kernel_file: str) -> str:
    if not row["file"]:
        return ""
    return str(row["line"]) if row["file"] == kernel_file else f"{os.path.basename(row['file'])}:{row['line']}"


def hot_table(
    manifest: Manifest,
    source_map: SourceMap,
    rows: list[dict[str, Any]],
    no_line: dict[str, Any],
    top: int = 0,
    indent: str = "",
    out=None,
) -> None:
    """Per source line: machine instructions by class, spills, PTX registers, convert_layouts, layouts."""
    from rich.table import Table

    con = console(file=out)
    machine = source_map.get("machine") or "-"
    total = source_map["stages"].get(machine, {})
    con.print(
        f"{indent}[bold]{manifest['kernel']}[/bold] on {manifest['target']}: {len(rows)} source lines with "
        f"code; {machine}: {total.get('units', 0)} instructions, "
        f"{total.get('units', 0) - total.get('mapped', 0)} with no line",
        emoji=False,
    )
    shown = rows[:top] if top else rows
    used = [c for c in CLASSES if any(r[c] for r in rows + [no_line])]
    t = Table(box=None, header_style="bold", pad_edge=False)
    t.add_column(f"{indent}line", justify="right")
    t.add_column("source", max_width=44, no_wrap=True, overflow="ellipsis")
    t.add_column(machine, justify="right")
    for c in used:
        t.add_column(SHORT[c], justify="right")
    t.add_column("spill B", justify="right")
    has_ptx = "ptx" in source_map["stages"]
    if has_ptx:
        t.add_column("regs", justify="right")
    t.add_column("cvt", justify="right")
    t.add_column("layouts")
    for r in shown + ([no_line] if no_line["instructions"] or no_line["ttgir_ops"] else []):
        cells = [f"{indent}{_where(r, source_map['kernel_file'])}", esc(r["text"]), str(r["instructions"])]
        cells += [str(r[c] or "") for c in used]
        cells.append(str(r["spills"] or ""))
        if has_ptx:
            cells.append(str(r["regs"] or ""))
        cells += [str(r["convert_layouts"] or ""), " ".join(r["layouts"])]
        t.add_row(*cells, style="dim" if not r["file"] else None)
    con.print(t, emoji=False)
    if top and len(rows) > top:
        con.print(f"{indent}[dim]{len(rows) - top} more lines (irscope lines DIR --top 0)[/dim]", emoji=False)


def hot_json(
    folder: Path,
    manifest: Manifest,
    source_map: SourceMap,
    sort: str,
    rows: list[dict[str, Any]],
    no_line: dict[str, Any],
) -> str:
    return json.dumps(
        {
            "irscope_lines": 1,
            "kernel": manifest["kernel"],
            "target": manifest["target"],
            "folder": str(folder),
            "machine": source_map.get("machine"),
            "sort": sort,
            "lines": rows,
            "no_line": no_line,
        },
        indent=1,
    )


def _stage_summary(stage: str, fig: dict[str, Any]) -> str:
    unit = stages.unit(stage)
    parts = [f"{fig['n']} {unit}"]
    if fig.get("classes"):
        parts.append(", ".join(f"{c} {n}" for c, n in fig["classes"].items()))
    if fig.get("spill_bytes"):
        parts.append(f"spills {fig['spill_bytes']} B")
    if fig.get("regs"):
        parts.append(f"{fig['regs']} registers written")
    if fig.get("layouts"):
        parts.append("layouts " + " ".join("#" + a for a in fig["layouts"]))
    top_ops = list(fig.get("ops", {}).items())[:6]
    parts.append(
        " ".join(f"{op} x{n}" if n > 1 else op for op, n in top_ops) + (" ..." if len(fig.get("ops", {})) > 6 else "")
    )
    return "; ".join(parts)


def line_detail(
    manifest: Manifest,
    source_map: SourceMap,
    entry: dict[str, Any],
    ir: dict[str, list[tuple[int, str]]] | None = None,
    out=None,
) -> None:
    """One source line in every stage (its callees under it); with --stage, that stage's lines too."""
    con = console(file=out)
    name = os.path.basename(entry["file"])
    callers = f"  [dim](reached from {entry['callers']} lines)[/dim]" if entry.get("callers") else ""
    con.print(f"[bold]{name}:{entry['line']}[/bold]  {esc(entry['text'])}{callers}", emoji=False)
    con.print(f"  [dim]{manifest['kernel']} on {manifest['target']}[/dim]", emoji=False)
    for stage, fig in entry["stages"].items():
        if ir is not None and stage not in ir:
            continue
        file = source_map["stages"].get(stage, {}).get("file", "")
        con.print(
            f"  [bold]{stage:7}[/bold] {esc(_stage_summary(stage, fig))}  [dim]({file}: {_span(fig['at'])})[/dim]",
            emoji=False,
        )
    for callee in entry.get("callees", []):
        con.print(
            f"  inlined from {os.path.basename(callee['file'])}:{callee['line']}  {esc(callee['text'])}", emoji=False
        )
        for stage, fig in callee["stages"].items():
            if ir is None or stage in ir:
                con.print(f"    {stage:7} {esc(_stage_summary(stage, fig))}", emoji=False)
    for stage, lines in (ir or {}).items():
        con.print(f"\n[bold]{stage}[/bold] lines of {name}:{entry['line']}:", emoji=False)
        for n, text in lines:
            click.echo(safe.text(f"{n:6}  {text}"), file=out)


def _span(at: list[int]) -> str:
    if not at:
        return "none"
    return f"line {at[0]}" if len(at) == 1 else f"{len(at)} lines, {at[0]}-{at[-1]}"


def line_json(
    folder: Path,
    manifest: Manifest,
    source_map: SourceMap,
    entry: dict[str, Any],
    ir: dict[str, list[tuple[int, str]]] | None = None,
) -> str:
    doc: dict[str, Any] = {
        "irscope_lines": 1,
        "kernel": manifest["kernel"],
        "target": manifest["target"],
        "folder": str(folder),
        "machine": source_map.get("machine"),
        "line": entry,
    }
    if ir is not None:
        doc["ir"] = {s: [{"line": n, "text": t} for n, t in lines] for s, lines in ir.items()}
    return json.dumps(doc, indent=1)
