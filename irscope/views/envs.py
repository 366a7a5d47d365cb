"""`irscope envs`'s views: the table of the Triton environments irscope made, the lines on what was
removed, and the --json documents. Everything here formats what releases/inventory.py returned."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from irscope.releases.inventory import EnvInfo, Inventory
from irscope.views.console import console, esc


def size_text(n: int) -> str:
    """Bytes as a person reads an environment's size: '912 MB', '1.2 GB' (decimal, as pip and du -h --si)."""
    if n >= 10**9:
        return f"{n / 10**9:.1f} GB"
    if n >= 10**6:
        return f"{n / 10**6:.0f} MB"
    if n >= 10**3:
        return f"{n / 10**3:.0f} kB"
    return f"{n} B"


def _when(t: float | None, now: float) -> str:
    if t is None:
        return "never"
    days = (now - t) / 86400
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
    if days < 1:
        return f"{stamp} (today)"
    return f"{stamp} ({days:.0f} day{'s' if round(days) != 1 else ''} ago)"


def table(inv: Inventory) -> None:
    """The environments, one row each, and the total."""
    from rich.table import Table

    con = console()
    if not inv.envs and not inv.unfinished:
        con.print(f"no Triton environment made by irscope in {esc(inv.folder)}")
        return
    now = time.time()
    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("release", "size", "made", "last used", "path"):
        t.add_column(col, justify="right" if col == "size" else "left")
    for e in inv.envs:
        t.add_row(esc(e.release), size_text(e.size_bytes), _when(e.made, now), _when(e.last_used, now), esc(e.path))
    con.print(t)
    n = len(inv.envs)
    line = f"{n} environment{'s' if n != 1 else ''}, {size_text(inv.total_bytes)} in {esc(inv.folder)}"
    if inv.unfinished:
        line += (
            f" ({len(inv.unfinished)} unfinished build{'s' if len(inv.unfinished) != 1 else ''} a stopped run "
            f"left: {size_text(inv.unfinished_bytes)})"
        )
    con.print(line)
    con.print("[dim]remove one: irscope envs remove RELEASE; all of them: irscope envs remove --all[/dim]")


def removed(gone: list[EnvInfo], leftovers: list[Path]) -> None:
    """One line per environment removed (and the unfinished builds)."""
    con = console()
    for e in gone:
        con.print(f"removed {esc(e.release)} ({size_text(e.size_bytes)}): {esc(e.path)}")
    if leftovers:
        con.print(f"removed {len(leftovers)} unfinished build{'s' if len(leftovers) != 1 else ''}")
    if not gone and not leftovers:
        con.print("no environment to remove")


def _env_doc(e: EnvInfo) -> dict[str, Any]:
    doc = asdict(e)
    doc["path"] = str(e.path)
    return doc


def inventory_json(inv: Inventory) -> str:
    """{"folder", "envs": [{release, dist, version, path, size_bytes, made, last_used, how}], "unfinished", "total_bytes"}."""
    return json.dumps(
        {
            "folder": str(inv.folder),
            "envs": [_env_doc(e) for e in inv.envs],
            "unfinished": [str(p) for p in inv.unfinished],
            "total_bytes": inv.total_bytes,
        },
        indent=1,
    )


def removed_json(gone: list[EnvInfo], leftovers: list[Path]) -> str:
    return json.dumps(
        {"removed": [_env_doc(e) for e in gone], "unfinished_removed": [str(p) for p in leftovers]}, indent=1
    )
