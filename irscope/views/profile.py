"""`irscope profile`'s views: the hot lines of a measured profile, its totals and roofline point, and
the document as JSON. Everything shown is in profile.json (schema.PROFILE); nothing is computed here
beyond the order and the rounding.
"""

from __future__ import annotations

import json
import os

from irscope.artifacts.profiled import stall_word
from irscope.records import Profile, ProfileLine, ProfileTotals
from irscope.views.console import console, esc

_PLUMBING = ("arith.", "ttg.memdesc_index", "tt.splat", "tt.broadcast", "tt.make_range", "tt.addptr")


def _gb(n: float | None) -> str:
    if not n:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _became(line: ProfileLine, n: int = 3) -> str:
    """The line's TTGIR ops, most first, then its SASS opcodes: what the line became."""
    # the ops that name what the line does (a load, a barrier wait, an MMA) before index arithmetic
    ttgir = sorted(line.get("ttgir", {}).items(), key=lambda kv: (kv[0].startswith(_PLUMBING), -kv[1]))
    ops = [op for op, _ in ttgir if op and op not in ("scf.yield", "tt.return")][:n]
    sass = sorted(line.get("sass_ops", {}).items(), key=lambda kv: -kv[1])[:n]
    out = ", ".join(ops)
    if sass:
        out += (" → " if out else "") + " ".join(op for op, _ in sass)
    return out


def _where(line: ProfileLine, kernel_file: str | None) -> str:
    name = os.path.basename(line["file"])
    return str(line["line"]) if kernel_file and line["file"] == kernel_file else f"{name}:{line['line']}"


def summary(doc: Profile, folder: str, top: int = 12) -> None:
    """Hot lines (share of samples, top stall reasons, bytes, what they became), totals, roofline point."""
    from rich.table import Table

    con = console()
    t = doc["totals"]
    lines = doc["lines"]
    files = [ln["file"] for ln in lines]
    kernel_file = max(set(files), key=files.count) if files else None
    con.print(
        f"[bold]{esc(doc['kernel'])}[/bold] on {esc(doc.get('device') or '?')}, measured by "
        f"{esc(doc['tool'])}: {t['samples']:.0f} warp samples over {len(lines)} lines"
        + (f" of {esc(os.path.basename(kernel_file))}" if kernel_file else "")
    )
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("line", justify="right")
    table.add_column("share", justify="right")
    table.add_column("top stalls", no_wrap=True)
    table.add_column("bytes", justify="right")
    table.add_column("source", max_width=48, no_wrap=True, overflow="ellipsis")
    table.add_column("became", no_wrap=True, overflow="ellipsis", max_width=60)
    for line in lines[:top]:
        stalls = sorted(line.get("stalls", {}).items(), key=lambda kv: -kv[1])[:2]
        words = ", ".join(f"{stall_word(k)} {v / line['samples']:.0%}" for k, v in stalls if line["samples"])
        table.add_row(
            _where(line, kernel_file),
            f"{100 * line['share']:.1f} %",
            esc(words),
            _gb(line.get("bytes")),
            esc(line.get("text") or ""),
            esc(_became(line)),
        )
    con.print(table)
    for line in lines[:top]:
        for p in line.get("passes", []):
            con.print(f"  line {_where(line, kernel_file)}: {esc(p)}")
    unmapped = doc.get("unmapped", {}).get("samples", 0)
    if unmapped and t["samples"]:
        con.print(f"  {unmapped:.0f} samples on instructions with no line ({unmapped / t['samples']:.1%})")
    stalls = sorted(t.get("stalls", {}).items(), key=lambda kv: -kv[1])[:4]
    if stalls and t["samples"]:
        con.print("stalls: " + ", ".join(f"{stall_word(k)} {v / t['samples']:.0%}" for k, v in stalls))
    _roofline(con, t, doc)
    con.print(f"[dim]{esc(folder)}/profile.json[/dim]")


def _roofline(con, t: ProfileTotals, doc: Profile) -> None:
    duration = t.get("duration_ns")
    if duration is None:
        con.print("roofline: not measured (Proton samples lines only; install Nsight Compute for the counters)")
        return
    parts = [f"{duration / 1000:.1f} us"]
    if t.get("dram_gbps") is not None:
        peak = f" of {t['peak_dram_gbps']:.0f} GB/s" if t.get("peak_dram_gbps") else ""
        parts.append(
            f"DRAM {_gb(t.get('dram_bytes'))} at {t['dram_gbps']:.0f} GB/s = {_pct(t.get('dram_peak_share'))}{peak}"
        )
    if t.get("tensor_flops") == 0:  # measured: the tensor pipe did nothing (a memory-bound kernel)
        parts.append("no tensor-core work")
    elif t.get("tensor_tflops") is not None:
        peak = f" of {t['peak_tensor_tflops']:.0f}" if t.get("peak_tensor_tflops") else ""
        parts.append(f"tensor {t['tensor_tflops']:.0f} TFLOP/s = {_pct(t.get('tensor_peak_share'))}{peak}")
    chip = f" (peaks: the {doc['chip']} row of the chip table)" if doc.get("chip") else ""
    con.print("roofline: " + ", ".join(parts) + chip)


def as_json(doc: Profile) -> str:
    """The profile document as profile.json holds it."""
    return json.dumps(doc, indent=1)
