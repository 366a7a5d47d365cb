"""A dump folder's profile.json as the report shows it: measured heat in the source gutter.

When `irscope profile` measured the dump's kernel on a GPU, the Python pane's gutter shows each
line's share of all warp-stall samples (its top stall reasons in the bar's tooltip) instead of the
static instruction counts, and the page says what measured it ("measured by ncu 2025.3.1.0 on NVIDIA
H200"). A damaged profile.json is BadInput naming the file and field (artifacts.profiled.read), as a
damaged manifest is. Every figure goes through compare.profiles.finite: the page's JSON stays finite
whatever number a hostile folder holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irscope.artifacts import profiled
from irscope.artifacts.profiled import stall_word
from irscope.compare.profiles import finite, share, top_stalls
from irscope.records import Profile, ProfileTotals

HOT = 15


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %" if x >= 0.0005 else "<0.1 %"


def _count(x: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.0f}"


def read(folder: Path) -> Profile | None:
    """The folder's checked profile.json, or None (BadInput for a damaged one)."""
    return profiled.read(folder)


def model(doc: Profile, kernel_file: str, first: int, source_lines: int, kernel: str = "") -> dict[str, Any]:
    """Per source-pane line (numbered from 1, as the pane is): its share of the kernel's warp-stall
    samples, the top reasons and a tooltip; the hot lines; the totals as cards; what measured it; the
    kernel it names when that is not the dump's own (a profile.json copied into the wrong folder)."""
    total = doc["totals"]["samples"]
    per: dict[int, dict[str, Any]] = {}
    elsewhere = 0.0
    for e in doc["lines"]:
        src = e["line"] - first + 1
        if e["file"] != kernel_file or not 0 < src <= source_lines:
            elsewhere = finite(elsewhere + finite(e["samples"]))
            continue
        row = per.setdefault(src, {"samples": 0.0, "stalls": {}, "executed": 0.0, "bytes": 0.0})
        row["samples"] = finite(row["samples"] + finite(e["samples"]))
        for k in ("executed", "bytes"):
            row[k] = finite(row[k] + finite(e.get(k) or 0))
        for k, v in (e.get("stalls") or {}).items():
            row["stalls"][k] = finite(row["stalls"].get(k, 0.0) + finite(v))
    rows = {}
    for src, r in per.items():
        s, top = share(r["samples"], total), top_stalls(r["stalls"])
        tip = (
            f"{_pct(s)} of warp-stall samples ({_count(r['samples'])})"
            + ("; top stalls: " + ", ".join(f"{stall_word(k)} {_pct(v)}" for k, v in top) if top else "")
            + (f"; {_count(r['executed'])} warp instructions executed" if r["executed"] else "")
            + (f"; {_count(r['bytes'])}B moved" if r["bytes"] else "")
        )
        rows[src] = {
            "share": s,
            "samples": r["samples"],
            "top": [[stall_word(k), v] for k, v in top],
            "top_reason": stall_word(top[0][0]) if top else "",
            "executed": r["executed"],
            "bytes": r["bytes"],
            "tip": tip,
        }
    hot = sorted((k for k in rows if rows[k]["samples"] > 0), key=lambda k: (-rows[k]["share"], k))[:HOT]
    device = doc.get("device") or ""
    return {
        "tool": doc["tool"],
        "device": device,
        "by": f"measured by {doc['tool']}" + (f" on {device}" if device else ""),
        "command": doc.get("command") or "",
        "other_kernel": doc["kernel"] if kernel and doc["kernel"] != kernel else "",
        "rows": rows,
        "max_share": max((r["share"] for r in rows.values()), default=0.0),
        "hot": [{"src": k, "share_text": _pct(rows[k]["share"]), **rows[k]} for k in hot],
        "elsewhere": _pct(share(elsewhere, total)) if elsewhere else "",
        "reasons": [[stall_word(k), _pct(v)] for k, v in top_stalls(doc["totals"].get("stalls"), 5)],
        "cards": cards(doc["totals"]),
    }


def cards(t: ProfileTotals) -> list[dict[str, Any]]:
    """The measured totals as the Figures tab's cards (label, value, detail, a 0..1 fill or None)."""
    out: list[dict[str, Any]] = []
    if t.get("duration_ns") is not None:
        out.append(
            {
                "label": "duration",
                "value": f"{finite(t['duration_ns']) / 1000:.1f} us",
                "detail": "measured, one launch",
                "fill": None,
            }
        )
    out.append(
        {"label": "stall samples", "value": _count(finite(t["samples"])), "detail": "warp-stall samples", "fill": None}
    )
    if t.get("dram_gbps") is not None:
        peak = t.get("dram_peak_share")
        out.append(
            {
                "label": "DRAM bandwidth",
                "value": f"{finite(t['dram_gbps']):.0f} GB/s",
                "detail": f"{_pct(share(peak, 1))} of the chip's peak" if peak is not None else "achieved",
                "fill": share(peak, 1) if peak is not None else None,
            }
        )
    if t.get("tensor_tflops") is not None:
        peak = t.get("tensor_peak_share")
        out.append(
            {
                "label": "tensor throughput",
                "value": f"{finite(t['tensor_tflops']):.0f} TFLOP/s",
                "detail": f"{_pct(share(peak, 1))} of the chip's peak" if peak is not None else "achieved",
                "fill": share(peak, 1) if peak is not None else None,
            }
        )
    return [{"bad": False, **c} for c in out]
