"""The frontier comparison's views (`irscope frontier CAPTURE_A CAPTURE_B`): the figures side by side per
direction and in total, then each side's kernels; and the --json document (irscope_frontier 1).

Everything here formats a compare.frontier.Frontier it is given.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from irscope.compare.frontier import INDUCTOR_LAYERS, Frontier, FrontierSide, Kernel
from irscope.views.console import console, esc, fmt_bytes, widths

FRONTIER_JSON_VERSION = 1
_FIGURES = (
    ("kernels", "kernels"),
    ("launches", "launches per run"),
    ("load_bytes", "loaded B / program"),
    ("store_bytes", "stored B / program"),
    ("registers_max", "registers (most)"),
    ("spills", "spills"),
    ("shared_bytes_max", "shared memory (most)"),
    ("occupancy_min", "occupancy (lowest)"),
)


def _value(name: str, v: Any) -> str:
    if v is None:
        return "-"
    if name.startswith("occupancy"):
        return f"{v * 100:.0f}%"
    if "bytes" in name:
        return fmt_bytes(v)
    return str(v)


def _made_by(k: Kernel) -> str:
    m = k.made_by
    if m.get("layer") in INDUCTOR_LAYERS:
        ops = ", ".join(o.removeprefix("aten.") for o in m.get("aten_ops") or [])
        head = f"{m['layer']} {m.get('category') or '?'}"
        return f"{head}: {ops}" if ops else head
    return str(m.get("layer"))


def _side_title(side: FrontierSide) -> str:
    scripts = ", ".join(Path(s).name for s in side.scripts) or "?"
    return f"{side.name}  {esc(str(side.folder))}  [dim]({esc(scripts)})[/dim]"


def frontier_table(f: Frontier) -> None:
    from rich.table import Table

    con = console()
    con.print("[bold]frontier[/bold]  two implementations, the figures that decide between them")
    for side in (f.a, f.b):
        con.print(f"  {_side_title(side)}  {len(side.kernels)} kernel{'s' if len(side.kernels) != 1 else ''}")
    groups = [(d, f.a.by_direction[d], f.b.by_direction[d]) for d in f.directions] + [("total", f.a.total, f.b.total)]
    t = Table(box=None, pad_edge=False, show_edge=False)
    t.add_column("")
    for name, _, _ in groups:
        t.add_column(f"{name} a", justify="right")
        t.add_column(f"{name} b", justify="right")
    for attr, label in _FIGURES:
        row = [label]
        for _, ta, tb in groups:
            row += [_value(attr, getattr(ta, attr)), _value(attr, getattr(tb, attr))]
        t.add_row(*row)
    con.print(t)
    if not f.paired:
        left = [f"{s.name}: {k.name}" for s in (f.a, f.b) for k in s.kernels if k.direction not in f.directions]
        con.print(f"  [dim]not paired by direction (only in the totals): {esc(', '.join(left))}[/dim]")
    for side in (f.a, f.b):
        con.print(f"\n[bold]{_side_title(side)}[/bold]")
        kt = Table(box=None, pad_edge=False, show_edge=False)
        for col in (
            "direction",
            "kernel",
            "made by",
            "launches",
            "grid",
            "threads",
            "loaded / program",
            "stored / program",
            "loops",
            "regs",
            "spills",
            "smem",
            "occ",
        ):
            kt.add_column(
                col,
                justify="left" if col in ("direction", "kernel", "made by") else "right",
                no_wrap=col != "made by",
                overflow="fold",
                min_width=26 if col == "made by" else None,
            )
        for k in side.kernels:
            grid = "x".join(str(g) for g in (k.grid[:1] if k.grid[1:] == [1, 1] else k.grid)) if k.grid else "-"
            kt.add_row(
                k.direction or "?",
                esc(_label(k)),
                esc(_made_by(k)),
                _launches(k),
                grid,
                _value("", k.threads),
                _moved(k.load_bytes, k.load_widths),
                _moved(k.store_bytes, k.store_widths),
                _value("", k.loops),
                _value("", k.registers),
                _value("", k.spills),
                _value("bytes", k.shared_bytes),
                _value("occupancy", k.occupancy),
            )
        con.print(kt)
        for k in side.kernels:
            if k.problem:
                con.print(f"  [yellow]{esc(k.name)}[/yellow]: {esc(k.problem)}")
    con.print(f"\n[dim]B / program: {esc(f.bytes_note)}.[/dim]")


def _label(k: Kernel) -> str:
    if not k.config:
        return k.name
    choice = "" if k.chosen is None else ", chosen" if k.chosen else ", not chosen"
    return f"{k.name} [{k.config}{choice}]"


def _launches(k: Kernel) -> str:
    """The run's own launches, and those its autotuner or do_bench timed (not in the totals)."""
    return f"{k.launches} (+{k.timed_launches} timed)" if k.timed_launches else str(k.launches)


def _moved(n: int | None, w: dict[str, int]) -> str:
    return "-" if n is None else f"{fmt_bytes(n)} ({widths(w)})"


def frontier_json(f: Frontier) -> str:
    def side(s: FrontierSide) -> dict[str, Any]:
        return {
            "folder": str(s.folder),
            "scripts": s.scripts,
            "kernels": [asdict(k) for k in s.kernels],
            "by_direction": {d: asdict(t) for d, t in s.by_direction.items()},
            "total": asdict(s.total),
        }

    return json.dumps(
        {
            "irscope_frontier": FRONTIER_JSON_VERSION,
            "bytes_note": f.bytes_note,
            "directions": f.directions,
            "paired": f.paired,
            "a": side(f.a),
            "b": side(f.b),
        },
        indent=1,
    )
