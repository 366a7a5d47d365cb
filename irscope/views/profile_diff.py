"""`irscope diff-profiles`: two measured dumps, line by line (the summary and --json, irscope_profile_diff 1).

Formats a compare.profiles.ProfileDiff: the shares, top reasons and the order of the lines were
computed by the comparison. Every string came from a profile.json (data from anyone): it is printed
as text (rich markup escaped, control characters dropped).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from irscope.artifacts.profiled import stall_word
from irscope.views.console import console, esc

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.compare.profiles import LineChange, ProfileDiff, ProfileSide

PROFILE_DIFF_JSON_VERSION = 1
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _t(x: Any, limit: int = 80) -> str:
    """A string from a profile as one line of plain text."""
    s = _CONTROL.sub(" ", str(x))
    return esc(s if len(s) <= limit else s[: limit - 3] + "...")


def _pct(x: float) -> str:
    if x == 0 or x >= 0.095:
        return f"{x * 100:.0f} %"
    return f"{x * 100:.1f} %" if x >= 0.0005 else "<0.1 %"


def _tops(top: list[tuple[str, float]]) -> str:
    return ", ".join(f"{_t(stall_word(k), 30)} {_pct(v)}" for k, v in top) or "-"


def _total(name: str, v: float | None) -> str:
    if v is None:
        return "-"
    if name == "duration_ns":
        return f"{v / 1000:.1f} us"
    if name.endswith("_share"):
        return _pct(v)
    if name == "dram_gbps":
        return f"{v:.0f} GB/s"
    if name == "tensor_tflops":
        return f"{v:.0f} TFLOP/s"
    return f"{v:.3g}" if abs(v) >= 1e6 else f"{v:.0f}"


def line_words(c: LineChange, with_b: str) -> str:
    """`line 34: 46 % of stalls, long scoreboard -> 26 %, barrier with num_stages=3`."""
    top = lambda t: f", {_t(stall_word(t[0][0]), 30)}" if t else ""
    same = bool(c.a_top and c.b_top and c.a_top[0][0] == c.b_top[0][0])
    return (
        f"line {c.line}: {_pct(c.a_share)} of stalls{top(c.a_top)} → {_pct(c.b_share)}"
        f"{'' if same else top(c.b_top)} with {with_b}"
    )


def _side_line(s: ProfileSide) -> str:
    return f"{_t(s.label, 120)}  [dim]measured by {_t(s.tool, 40)}{' on ' + _t(s.device, 40) if s.device else ''}[/dim]"


def profile_summary(d: ProfileDiff, out: Console | None = None, limit: int = 15) -> None:
    """Settings that differ, the totals side by side, then the lines whose share of stalls moved most."""
    from rich.table import Table

    con = out or console()
    with_b = _t(d.setting_words, 120)
    con.print(f"[bold]profile diff[/bold]  {_t(d.kernel)}")
    con.print(f"  a  {_side_line(d.a)}")
    con.print(f"  b  {_side_line(d.b)}")
    if d.settings:
        con.print(
            "  settings that differ: "
            + "; ".join(f"{_t(s.name, 40)} {_t(s.a, 30)} → {_t(s.b, 30)}" for s in d.settings[:8])
            + (f" (and {len(d.settings) - 8} more: --json lists them)" if len(d.settings) > 8 else "")
        )
    else:
        con.print("  [yellow]the two dumps were compiled with the same settings[/yellow]")
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("  total", "left"), ("a", "right"), ("b", "right"), ("change", "right")):
        t.add_column(col, justify="left" if just == "left" else "right")
    for name, va in d.a.totals.items():
        vb = d.b.totals.get(name)
        if va is None and vb is None:
            continue
        change = f"{(vb - va) / va * 100:+.0f} %" if va and vb is not None and not name.endswith("_share") else ""
        t.add_row(f"  {name}", _total(name, va), _total(name, vb), change)
    con.print(t)
    con.print(f"  top stalls  a: {_tops(d.a.top)}")
    con.print(f"              b: {_tops(d.b.top)}")
    con.print()
    moved = [c for c in d.lines if c.a_share or c.b_share]
    con.print(f"[bold]lines[/bold]  {len(moved)} with stall samples, biggest change of their share first")
    for c in moved[:limit]:
        con.print(f"  {line_words(c, with_b)}  [dim]({c.change * 100:+.1f} pts) {_t(c.text, 60)}[/dim]")
    if len(moved) > limit:
        con.print(f"  [dim]{len(moved) - limit} more lines (--json lists them)[/dim]")


def profile_json(d: ProfileDiff) -> str:
    """The schema (irscope_profile_diff 1; keys are stable, new keys may be added):

    {"irscope_profile_diff": 1, "kernel": str,
     "a"/"b": {"label", "folder", "tool", "device", "totals": {name: number | null}, "top_stalls": [[reason, share]]},
     "settings": {name: {"a", "b"}},     what went in differently (target, options.*, env.*), as diff --json's inputs
     "with": str,                        side b's settings as KEY=VALUE (what the lines' sentences say)
     "lines": [{"file", "line", "text", "change",          change: b share - a share (of all stall samples)
                "a"/"b": {"samples", "share", "top_stalls": [[reason, share of the line's stalls]]}}]}
                                         biggest |change| first
    """

    def side(s: ProfileSide) -> dict[str, Any]:
        return {
            "label": s.label,
            "folder": str(s.folder),
            "tool": s.tool,
            "device": s.device,
            "totals": s.totals,
            "top_stalls": [list(x) for x in s.top],
        }

    doc = {
        "irscope_profile_diff": PROFILE_DIFF_JSON_VERSION,
        "kernel": d.kernel,
        "a": side(d.a),
        "b": side(d.b),
        "settings": {s.name: {"a": s.a, "b": s.b} for s in d.settings},
        "with": d.setting_words,
        "lines": [
            {
                "file": c.file,
                "line": c.line,
                "text": c.text,
                "change": c.change,
                "a": {"samples": c.a_samples, "share": c.a_share, "top_stalls": [list(x) for x in c.a_top]},
                "b": {"samples": c.b_samples, "share": c.b_share, "top_stalls": [list(x) for x in c.b_top]},
            }
            for c in d.lines
        ],
    }
    return json.dumps(doc, indent=1, default=str)
