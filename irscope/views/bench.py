"""The bench's views: the table of timed variants (median, spread, ratio to the baseline with its
confidence interval, verdict, ratio to a --ref, throughput), the clocks and timer lines, and --json.

Everything here formats a timing.bench report it is given; the statistics were computed there.
`irscope diff --time` and `irscope sweep --time` show their timings through these too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from irscope.views.console import console

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.timing.bench import BenchReport, VariantReport
    from irscope.timing.statistics import Comparison

VERDICT_STYLE = {"faster": "green", "slower": "red", "same": "", "ambiguous": "yellow"}


def ratio_text(c: Comparison) -> str:
    """+1.23% [+0.80, +1.60]: the ratio's change and its 95 % CI, in percent."""
    return f"{c.delta_percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]"


def verdict_text(c: Comparison) -> str:
    style = VERDICT_STYLE.get(c.verdict, "")
    return f"[{style}]{c.verdict}[/{style}]" if style else c.verdict


def clocks_line(clocks: dict[str, Any]) -> str:
    """One line: where the clocks came from and their range, or why they were not watched."""
    if not clocks:
        return ""
    if not clocks.get("source"):
        return f"[yellow]{clocks.get('why_not') or 'clocks not watched'}[/yellow]"
    parts = [f"clocks ({clocks['source']}):"]
    if clocks.get("sm_mhz"):
        lo, mid, hi = clocks["sm_mhz"]
        parts.append(f"SM {lo:.0f}-{hi:.0f} MHz (median {mid:.0f})")
    if clocks.get("power_w"):
        parts.append(f"{clocks['power_w'][0]:.0f}-{clocks['power_w'][1]:.0f} W")
    if clocks.get("temp_c"):
        parts.append(f"{clocks['temp_c'][0]:.0f}-{clocks['temp_c'][1]:.0f} C")
    dropped = clocks.get("dropped_rounds", 0)
    parts.append(
        f"{dropped} round{'s' if dropped != 1 else ''} dropped below {clocks.get('floor', 0.95):.0%} "
        f"of the median clock"
    )
    return " ".join(parts[:1]) + " " + ", ".join(parts[1:])


def _throughput(v: VariantReport) -> str:
    thr = []
    if v.tflops is not None:
        thr.append(f"{v.tflops:.1f} TFLOP/s")
    if v.gbps is not None:
        thr.append(f"{v.gbps:.0f} GB/s")
    if v.peak_fraction is not None:
        thr.append(f"{v.peak_fraction * 100:.0f}% of peak")
    return ", ".join(thr)


def _print_header(con: Console, result: BenchReport, margin: float) -> None:
    """The device and rounds, the clocks, the timer and the timing process's phases."""
    con.print(
        f"[bold]{result.device}[/bold]  triton {result.triton_version}  {result.rounds} interleaved rounds "
        f"in {result.seconds:.1f} s (target: ratio CI within ±{result.precision_target * 100:.2g}%; "
        f"verdicts: same within ±{margin * 100:.2g}%)" + (f"; {result.method}" if result.method else "")
    )
    if line := clocks_line(getattr(result, "clocks", {})):
        con.print(line)
    if getattr(result, "tick_ms", 0):
        runs, batch = result.runs_per_round, getattr(result, "batch", 1)
        per = (
            f" of {batch} launches each (timed together: a tick is {result.tick_ms / batch * 1e6:.2g} ns a launch)"
            if batch > 1
            else ""
        )
        con.print(
            f"[dim]timer: {result.tick_ms * 1e6:.0f} ns ticks; a sample is the mean of {runs} "
            f"run{'s' if runs != 1 else ''}{per} of a variant in a round[/dim]"
        )
    if result.phases:
        p = result.phases
        con.print(
            f"[dim]timing process: torch and CUDA up in {p.get('start', 0):.1f} s (while irscope compiled), "
            f"binaries loaded and preflighted in {p.get('preflight', 0):.1f} s, rounds {p.get('measure', 0):.1f} s"
            "[/dim]"
        )


def bench_summary(result: BenchReport, out: Console | None = None) -> None:
    """The device and rounds, the clocks and timer, then per variant: median, IQR, CI, ratio to the
    baseline, verdict, ratio to the reference, throughput; the reference's row last."""
    from rich.table import Table

    con = out or console()
    margin = getattr(result, "margin", 0.01)
    _print_header(con, result, margin)
    ref = getattr(result, "ref", None)
    t = Table(box=None, header_style="bold")
    cols = (
        ["variant", "median", "IQR", "95% CI", "vs baseline", "verdict"] + (["vs ref"] if ref else []) + ["throughput"]
    )
    for col in cols:
        t.add_column(col, justify="right" if col in ("median", "IQR") else "left")
    notes: list[str] = []
    for v in result.variants + ([ref] if ref else []):
        is_ref = v is ref
        if v.summary is None:
            t.add_row(v.name, "", "", "", "", f"[red]{v.status}[/red]: {v.reason}", *([""] if ref else []), "")
            continue
        s = v.summary
        vs = v.versus_baseline
        verdict = verdict_text(vs) if vs else ("reference" if is_ref else "")
        if vs and vs.note and vs.note not in notes:
            notes.append(vs.note)
        if v.dropped:
            verdict = f"{verdict}; {v.dropped}" if verdict else v.dropped
        if v.status != "ok":
            verdict = f"[red]{v.status}[/red]: {v.reason}"
        elif is_ref and v.reason:
            verdict = f"reference; [yellow]{v.reason}[/yellow]"
        cells = [
            v.name,
            f"{s.median * 1e3:.1f} us",
            f"{s.iqr * 1e3:.1f} us",
            f"[{s.ci_low * 1e3:.1f}, {s.ci_high * 1e3:.1f}] us",
            ratio_text(vs) if vs else ("" if is_ref else "baseline"),
            verdict,
        ]
        if ref:
            vr = v.versus_reference
            cells.append(f"{ratio_text(vr)} {verdict_text(vr)}" if vr else "")
        t.add_row(*cells, _throughput(v))
    con.print(t)
    for note in notes:
        con.print(f"[yellow]{note}[/yellow]")
    if ref and ref.summary:
        for v in result.variants:
            if v.versus_reference:
                c = v.versus_reference
                con.print(
                    f"{v.name} takes {c.ratio:.3f}x the time of {ref.name[5:]} "
                    f"[{c.ci_low:.3f}, {c.ci_high:.3f}]: {verdict_text(c)} (margin ±{c.margin * 100:.2g}%)"
                )
                break


def bench_json(result: BenchReport) -> str:
    """The bench --json document: the report's dataclasses as JSON, each ratio with its delta_percent."""

    def conv(o):
        if dataclasses.is_dataclass(o):
            d = {f.name: conv(getattr(o, f.name)) for f in dataclasses.fields(o)}
            if hasattr(o, "delta_percent"):
                d["delta_percent"] = o.delta_percent
            return d
        if isinstance(o, (list, tuple)):
            return [conv(x) for x in o]
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        return o

    return json.dumps(conv(result), indent=1, default=str)
