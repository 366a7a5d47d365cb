"""The sweep's views (the progress while configs compile is views/progress.py's): the ranked table (with timings and the
winner after --time), the --json document and the line on a written recipe.

Everything here formats the sweep's configs and the timings it is given (sweep.timed.SweepTiming:
each config's row, the winner and its margin, computed there); each row's static numbers come from
sweep.rank.row. --history's table formats the database's rows.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from irscope.sweep.rank import row, to_json
from irscope.views.bench import bench_json
from irscope.views.console import console, esc, fmt_bytes, fmt_share

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.sweep.configs import Config
    from irscope.sweep.run import SweepRun
    from irscope.sweep.search import SearchLog
    from irscope.sweep.timed import Row, SweepTiming


def _timed_cells(v: Row | None, timed: SweepTiming) -> list[str]:
    """A config's median, its distance to the winner and where its timing came from (or its status)."""
    if not (v and v.median_ms is not None):
        return ["", v.status if v else "", ""]
    vs = (
        "winner"
        if timed.winner and v.name == timed.winner.name
        else ""
        if v.vs_winner is None
        else f"{(v.vs_winner - 1) * 100:+.2f}%" + ("" if v.paired else " [dim](est.)[/dim]")
    )
    return [median_text(v.median_ms * 1e3) + (" [dim](dropped)[/dim]" if v.dropped else ""), vs, esc(v.source)]


def median_text(us: float) -> str:
    """A config's median time as the table prints it: '12.3 us'."""
    return f"{us:.1f} us"


def static_cell(column: str, v: Any) -> str:
    """One of sweep.rank.COLUMNS as the table prints it (shared memory in KiB, occupancy in %); the
    report's sweep page prints the same."""
    if v is None:
        return ""
    return fmt_share(v) if column == "occupancy" else fmt_bytes(v) if column == "shared" else str(v)


def sweep_table(
    configs: list[Config], timed: SweepTiming | None = None, out: Console | None = None, search: SearchLog | None = None
) -> None:
    """The configs in the order given, with their static stats (and timings after --time), then the tallies."""
    from rich.table import Table

    con = out or console()
    rows = timed.rows if timed else {}
    t = Table(box=None, header_style="bold")
    cols = ["#", "config", "status", "regs", "spills", "shared", "occupancy", "mma", "ld128"]
    if timed:
        cols += ["median", "vs winner", "timed"]
    for c in cols:
        t.add_column(
            c,
            justify="left" if c in ("config", "status", "timed") else "right",
            overflow="fold" if c == "status" else "ellipsis",
        )
    for cfg in configs:
        r = row(cfg)
        status = cfg.status if cfg.usable else f"[red]{cfg.status}[/red]: {esc(cfg.reason)}"  # whole: rich wraps
        if cfg.usable and cfg.spills:
            status = f"{cfg.status} [yellow](spills)[/yellow]"
        if cfg.retried:
            status += f" [dim](retried: {esc(cfg.retried)})[/dim]"
        cells = [
            str(cfg.index),
            cfg.label,
            status,
            *(static_cell(k, r[k]) for k in ("registers", "spills", "shared", "occupancy", "mma", "ld128")),
        ]
        if timed:
            cells += _timed_cells(rows.get(cfg.label), timed)
        t.add_row(*cells)
    con.print(t)
    done = sum(c.usable for c in configs)
    con.print(
        f"{done} of {len(configs)} configs compiled "
        f"({sum(c.status == 'cached' for c in configs)} from cache); "
        f"{sum(c.usable and c.spills for c in configs)} spill"
        + "".join(f"; {n} {status}" for status, n in _failures(configs).items())
        + (f"; {n} compiled again after a node was lost" if (n := sum(bool(c.retried) for c in configs)) else "")
    )
    if search is not None:
        con.print(
            f"search {search.strategy}: {search.proposed} configs tried in {search.generations} generations, "
            f"{search.pruned} pruned statically (not timed), {search.skipped} skipped uncompiled (at least the size "
            f"of one that did not fit); objective: {search.objective}; "
            f"stopped: {search.stopped}"
        )
    if timed:
        final = timed.final
        if final is not None:
            dropped = sum(1 for v in rows.values() if v.dropped)
            con.print(
                f"timed {sum(1 for v in rows.values() if v.median_ms is not None)} configs in {timed.batches} "
                f"batch(es), the winner's in {final.rounds} interleaved rounds; {dropped} dropped early as "
                f"clearly slower than the leader" + (f"; {final.method}" if final.method else "")
            )
        for note in timed.notes:
            con.print(f"[dim]{esc(note)}[/dim]")
        w = sweep_winner(timed)
        if w:
            name, median, margin = w
            con.print(f"[bold]winner[/bold]: {name} at {median * 1e3:.1f} us{margin}")
        if final is not None and final.ref is not None and timed.winner is not None:
            for report in final.variants:
                if report.name == timed.winner.name and report.versus_reference:
                    cmp = report.versus_reference
                    con.print(
                        f"the winner takes {cmp.ratio:.3f}x the time of {final.ref.name[5:]} "
                        f"[{cmp.ci_low:.3f}, {cmp.ci_high:.3f}] (in the winner's rounds): {cmp.verdict}"
                    )


def _failures(configs: list[Config]) -> dict[str, int]:
    """{status: how many} of the configs that did not compile, in order of first appearance."""
    out: dict[str, int] = {}
    for c in configs:
        if not c.usable:
            out[c.status] = out.get(c.status, 0) + 1
    return out


def sweep_winner(timed: SweepTiming) -> tuple[str, float, str] | None:
    """(name, median ms, text on the margin over the runner-up) of the sweep's winner, or None."""
    w = timed.winner
    if w is None:
        return None
    margin = ""
    if w.margin is not None:
        c = w.margin
        margin = (
            f", {c.delta_percent:.2f}% ahead of {w.runner_up} (95% CI [{(c.ci_low - 1) * 100:+.2f}, "
            f"{(c.ci_high - 1) * 100:+.2f}]%: {'significant' if c.ci_low > 1 else 'not significant'})"
        )
    elif w.others_dropped:
        margin = " (every other config was dropped as clearly slower; see their rows)"
    elif timed.final is None:
        margin = " (reused measurements, not paired in one run)"
    return w.name, w.median_ms, margin


def sweep_json(configs: list[Config], result: SweepRun) -> str:
    """The sweep --json document: one entry per config, the compile phase's time, the timing and its winner."""
    doc = {
        "configs": to_json(configs),
        "compile_seconds": round(result.compile_seconds, 3),
        "compile_end": result.compile_end,
    }  # the parallel compile phase, wall clock; when it ended (epoch s)
    if result.search is not None:
        doc["search"] = asdict(result.search)
    timed = result.timed
    if timed:
        doc["timing"] = json.loads(bench_json(timed.final)) if timed.final else None
        doc["rows"] = [asdict(r) for r in timed.rows.values()]
        doc["notes"] = timed.notes
        doc["sweep_id"] = result.sweep_id
        w = sweep_winner(timed)
        doc["winner"] = {"config": w[0], "median_ms": w[1]} if w else None
    return json.dumps(doc, indent=1, default=str)


def history_table(sweeps: list[dict], db: Path, as_json: bool) -> None:
    """--history: the past timed sweeps, newest first."""
    if as_json:
        click.echo(json.dumps({"db": str(db), "sweeps": sweeps}, indent=1, default=str))
        return
    from rich.table import Table

    con = console()
    if not sweeps:
        con.print(f"no timed sweep of this kernel in {esc(db)}")
        return
    t = Table(box=None, header_style="bold")
    for c in (
        "#",
        "when",
        "kernel",
        "target",
        "device",
        "triton",
        "strategy",
        "configs",
        "timed",
        "reused",
        "winner",
        "median",
    ):
        t.add_column(c, justify="right" if c in ("#", "configs", "timed", "reused", "median") else "left")
    for s in sweeps:
        t.add_row(
            str(s["id"]),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(s["started"])),
            s["kernel"],
            s["target"],
            s["device"] or "",
            s["triton"] or "",
            s["strategy"] or "",
            str(s["configs"]),
            str(s["timed"]),
            str(s["reused"]),
            esc(s["winner"] or ""),
            f"{s['winner_ms'] * 1e3:.1f} us" if s["winner_ms"] else "",
        )
    con.print(t)
    con.print(f"[dim]{len(sweeps)} sweeps in {esc(db)}[/dim]")


def note(text: str) -> None:
    """One line on stderr: something the sweep does differently from what was asked, and why."""
    click.echo(f"irscope: note: {text}", err=True)


def wrote_recipe(path: Path) -> None:
    """The line after --write-recipe."""
    click.echo(f"wrote {path} (check it: irscope recipes check {path})")
