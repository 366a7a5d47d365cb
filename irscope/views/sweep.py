"""The sweep's views: the progress bar while configs compile, the ranked table (with timings and the
winner after --time), the --json document and the line on a written recipe.

Everything here formats the sweep's configs and a timing.bench report it is given; each row's
numbers come from sweep.rank.row, the winner and each timing comparison from sweep.rank.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

import click

from irscope.sweep.rank import row, to_json, versus, winner
from irscope.views.bench import bench_json
from irscope.views.console import console, esc, fmt_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.sweep.configs import Config
    from irscope.timing.bench import BenchReport


class _NoProgress:
    """sweep_progress when there is no bar to show: the same context manager, advancing nothing."""

    def __enter__(self):
        return lambda cfg: None

    def __exit__(self, *exc):
        return False


def sweep_progress(total: int, enabled: bool = True) -> ContextManager[Callable[[Config], None]]:
    """A rich progress bar on stderr while configs compile (only on a terminal)."""
    if not enabled or not sys.stderr.isatty():
        return _NoProgress()
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    @contextmanager
    def bar():
        with Progress(TextColumn("compiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console(stderr=True), transient=True) as p:
            task = p.add_task("", total=total)
            yield lambda cfg: p.update(task, advance=1, description=f"{cfg.label}: {cfg.status}")

    return bar()


def sweep_table(configs: list[Config], timed: BenchReport | None = None, out: Console | None = None) -> None:
    """The configs in the order given, with their static stats (and timings after --time), then the tallies."""
    from rich.table import Table

    con = out or console()
    times = {v.name: v for v in timed.variants} if timed else {}
    t = Table(box=None, header_style="bold")
    cols = ["#", "config", "status", "regs", "spills", "shared", "occupancy", "mma", "ld128"]
    winner = sweep_winner(timed) if timed else None
    if timed:
        cols += ["median", "vs winner"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("config", "status") else "right",
                     overflow="fold" if c == "status" else "ellipsis")
    for cfg in configs:
        r = row(cfg)
        status = cfg.status if cfg.usable else f"[red]{cfg.status}[/red]: {esc(cfg.reason)}"  # whole: rich wraps
        if cfg.usable and cfg.spills:
            status = f"{cfg.status} [yellow](spills)[/yellow]"
        cells = [str(cfg.index), cfg.label, status,
                 *("" if r[k] is None else (f"{r[k] * 100:.0f}%" if k == "occupancy" else
                                            fmt_bytes(r[k]) if k == "shared" else str(r[k]))
                   for k in ("registers", "spills", "shared", "occupancy", "mma", "ld128"))]
        if timed:
            v = times.get(cfg.label)
            if v and v.summary:
                vs = versus(timed, winner[0], v.name) if winner and v.name != winner[0] else None
                cells += [f"{v.summary.median * 1e3:.1f} us" + (" [dim](dropped)[/dim]" if v.dropped else ""),
                          f"{vs.delta_percent:+.2f}%" if vs else "winner"]
            else:
                cells += ["", v.status if v else ""]
        t.add_row(*cells)
    con.print(t)
    done = sum(c.usable for c in configs)
    con.print(f"{done} of {len(configs)} configs compiled "
              f"({sum(c.status == 'cached' for c in configs)} from cache); "
              f"{sum(c.usable and c.spills for c in configs)} spill"
              + "".join(f"; {n} {status}" for status, n in _failures(configs).items()))
    if timed:
        dropped = sum(1 for v in timed.variants if v.dropped)
        con.print(f"timed {sum(1 for v in timed.variants if v.summary)} configs in {timed.rounds} interleaved rounds "
                  f"({timed.seconds:.1f} s); {dropped} dropped early as clearly slower than the leader"
                  + (f"; {timed.method}" if timed.method else ""))
        if winner:
            name, median, margin = winner
            con.print(f"[bold]winner[/bold]: {name} at {median * 1e3:.1f} us{margin}")


def _failures(configs: list[Config]) -> dict[str, int]:
    """{status: how many} of the configs that did not compile, in order of first appearance."""
    out: dict[str, int] = {}
    for c in configs:
        if not c.usable:
            out[c.status] = out.get(c.status, 0) + 1
    return out


def sweep_winner(timed: BenchReport) -> tuple[str, float, str] | None:
    """(name, median ms, text on the margin over the runner-up) of rank.winner, or None."""
    w = winner(timed)
    if w is None:
        return None
    margin = ""
    if w.margin is not None:
        c = w.margin
        margin = (f", {c.delta_percent:.2f}% ahead of {w.runner_up} (95% CI [{(c.ci_low - 1) * 100:+.2f}, "
                  f"{(c.ci_high - 1) * 100:+.2f}]%: {'significant' if c.ci_low > 1 else 'not significant'})")
    elif w.others_dropped:
        margin = " (every other config was dropped as clearly slower; see their rows)"
    return w.name, w.median_ms, margin


def sweep_json(configs: list[Config], timed: BenchReport | None = None, compile_seconds: float | None = None,
               compile_end: float | None = None) -> str:
    """The sweep --json document: one entry per config, the compile phase's time, the timing and its winner."""
    doc = {"configs": to_json(configs)}
    if compile_seconds is not None:
        doc["compile_seconds"] = round(compile_seconds, 3)  # the parallel compile phase, wall clock
        doc["compile_end"] = compile_end                     # when it ended (epoch seconds)
    if timed:
        doc["timing"] = json.loads(bench_json(timed))
        w = sweep_winner(timed)
        doc["winner"] = {"config": w[0], "median_ms": w[1]} if w else None
    return json.dumps(doc, indent=1, default=str)


def wrote_recipe(path: Path) -> None:
    """The line after --write-recipe."""
    click.echo(f"wrote {path} (check it: irscope recipes check {path})")
