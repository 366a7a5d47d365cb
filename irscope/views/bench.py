"""The bench's views: the table of timed variants (median, spread, ratio to the baseline with its
confidence interval, verdict, throughput) and the --json document.

Everything here formats a timing.bench report it is given; the statistics were computed there.
`irscope diff --time` and `irscope sweep --time` show their timings through these too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from irscope.views.console import console

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.timing.bench import BenchReport


def bench_summary(result: BenchReport, out: Console | None = None) -> None:
    """The device and rounds, then per variant: median, IQR, CI, ratio to the baseline, verdict, throughput."""
    from rich.table import Table

    con = out or console()
    con.print(f"[bold]{result.device}[/bold]  triton {result.triton_version}  {result.rounds} interleaved rounds "
              f"in {result.seconds:.1f} s (target: ratio CI within ±{result.precision_target * 100:.2g}%)"
              + (f"; {result.method}" if result.method else ""))
    if result.phases:
        p = result.phases
        con.print(f"[dim]timing process: torch and CUDA up in {p.get('start', 0):.1f} s (while irscope compiled), "
                  f"binaries loaded and preflighted in {p.get('preflight', 0):.1f} s, rounds {p.get('measure', 0):.1f} s"
                  "[/dim]")
    t = Table(box=None, header_style="bold")
    for col in ("variant", "median", "IQR", "95% CI", "vs baseline", "verdict", "throughput"):
        t.add_column(col, justify="right" if col in ("median", "IQR") else "left")
    for v in result.variants:
        if v.summary is None:
            t.add_row(v.name, "", "", "", "", f"[red]{v.status}[/red]: {v.reason}", "")
            continue
        s = v.summary
        vs = v.versus_baseline
        ratio = (f"{vs.delta_percent:+.2f}% [{(vs.ci_low - 1) * 100:+.2f}, {(vs.ci_high - 1) * 100:+.2f}]"
                 if vs else "baseline")
        verdict = vs.verdict if vs else ""
        if v.dropped:
            verdict = f"{verdict}; {v.dropped}" if verdict else v.dropped
        if v.status != "ok":
            verdict = f"[red]{v.status}[/red]: {v.reason}"
        thr = []
        if v.tflops is not None:
            thr.append(f"{v.tflops:.1f} TFLOP/s")
        if v.gbps is not None:
            thr.append(f"{v.gbps:.0f} GB/s")
        if v.peak_fraction is not None:
            thr.append(f"{v.peak_fraction * 100:.0f}% of peak")
        t.add_row(v.name, f"{s.median * 1e3:.1f} us", f"{s.iqr * 1e3:.1f} us",
                  f"[{s.ci_low * 1e3:.1f}, {s.ci_high * 1e3:.1f}] us", ratio, verdict, ", ".join(thr))
    con.print(t)


def bench_json(result: BenchReport) -> str:
    """The bench --json document: the report's dataclasses as JSON, each ratio with its delta_percent."""
    def conv(o):
        if dataclasses.is_dataclass(o):
            d = {k: conv(v) for k, v in dataclasses.asdict(o).items()}
            if hasattr(o, "delta_percent"):
                d["delta_percent"] = o.delta_percent
            return d
        if isinstance(o, list):
            return [conv(x) for x in o]
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        return o

    doc = conv(result)
    for row, v in zip(doc["variants"], result.variants):
        row["summary"] = conv(v.summary) if v.summary else None
        row["versus_baseline"] = conv(v.versus_baseline) if v.versus_baseline else None
    return json.dumps(doc, indent=1, default=str)
