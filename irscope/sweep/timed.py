"""A sweep's timings from several batches: GPUs of a cluster, search generations, the database.

Configs timed in different batches (another GPU, another timing process, an earlier sweep) are
never compared by their raw medians alone: each batch times a reference config too (the first
survivor; in a search, the incumbent), and a config's estimate is its median scaled by the
reference's standing (est = median / median_of_reference_in_its_batch * est_of_reference). That
estimate ranks every config and drives the search and the choice of finalists; it is not the
verdict. When the finalists (FINALISTS best estimates) were not all timed to the end in one
batch, they are re-timed together on one GPU, and the winner and its margin come from that
batch's paired rounds, as in a single-GPU sweep: a chained ratio carries two batches' noise and
two GPUs' few-percent differences, a paired re-time carries neither. Measurements reused from the
database (the same kernel binary, device name, Triton and method) enter with their stored median.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from irscope.jobs import vary
from irscope.sweep.rank import Winner
from irscope.sweep.rank import winner as paired_winner
from irscope.timing import bench, statistics
from irscope.timing.bench import BenchReport
from irscope.timing.variant import Variant

FINALISTS = 4


@dataclass
class Row:
    """One config's timing as the table shows it."""

    name: str
    status: str
    reason: str = ""
    median_ms: float | None = None  # in its own batch (or as stored)
    estimate_ms: float | None = None  # on the common scale (see the module's docstring)
    dropped: str = ""
    source: str = ""  # the batch: "this GPU", "GPU 1 (node ...)", "reused (sweep #3)"
    vs_winner: float | None = None  # ratio to the winner: paired when `paired`, else estimates
    paired: bool = False


@dataclass
class SweepTiming:
    """Every config's row, the batch the winner comes from, and what was done to get there."""

    rows: dict[str, Row]
    final: BenchReport | None  # the paired batch of the winner (None: all reused)
    winner: Winner | None
    notes: list[str] = field(default_factory=list)
    batches: int = 0

    @property
    def device(self) -> str:
        return self.final.device if self.final else ""


@dataclass
class Batch:
    """One timing process's report, where it ran, and its reference config's name."""

    report: BenchReport
    where: str
    reference: str


def combine(batches: list[Batch], reused: dict[str, tuple[float, str, str]] | None = None) -> dict[str, Row]:
    """Rows on one scale: each batch scaled by its reference's estimate (the first batch sets the scale;
    reused (median, source, dropped) rows are on it already: the same device, Triton and method)."""
    rows: dict[str, Row] = {}
    for name, (median, source, dropped) in (reused or {}).items():
        rows[name] = Row(name, "ok", median_ms=median, estimate_ms=median, dropped=dropped, source=source)
    for b in batches:
        by = {v.name: v for v in b.report.variants}
        ref = by.get(b.reference)
        scale = 1.0
        if ref is not None and ref.summary:
            known = rows.get(b.reference)
            if known is not None and known.estimate_ms:
                scale = known.estimate_ms / ref.summary.median
        for v in b.report.variants:
            est = v.summary.median * scale if v.summary else None
            old = rows.get(v.name)
            if old is not None and old.status == "ok" and not old.dropped and (v.dropped or v.status != "ok"):
                continue  # timed to the end elsewhere: that row stands
            rows[v.name] = Row(
                v.name,
                v.status,
                v.reason,
                v.summary.median if v.summary else None,
                est if old is None or old.estimate_ms is None or v.name != b.reference else old.estimate_ms,
                v.dropped,
                b.where,
            )
    return rows


def finalists(rows: dict[str, Row], n: int = FINALISTS) -> list[str]:
    """The n best estimates among the configs that were timed to the end and computed the right result."""
    ok = [
        (r.name, estimate) for r in rows.values() if r.status == "ok" and not r.dropped and (estimate := r.estimate_ms)
    ]
    return [name for name, _ in sorted(ok, key=lambda pair: pair[1])[:n]]


def conclude(
    batches: list[Batch], reused: dict[str, tuple[float, str, str]] | None, retime: Callable[[list[str]], Batch] | None
) -> SweepTiming:
    """Rows on one scale, then the winner: from the one batch that timed every finalist to the end, or
    from a paired re-time of the finalists on one GPU (`retime`)."""
    rows = combine(batches, reused)
    best = finalists(rows)
    notes = []
    final = next((b for b in batches if _times_all(b.report, best)), None)
    if final is None and not batches and reused:
        notes.append("every config to time was measured before under the same conditions; nothing was timed again")
    elif final is None and best and retime is not None:
        final = retime(best)
        notes.append(
            f"the {len(best)} finalists, timed in {len(batches) + bool(reused)} separate batches, "
            f"were re-timed together on {final.where}: the winner and its margin come from those rounds"
        )
        for v in final.report.variants:
            if v.name in rows and v.summary:
                rows[v.name].median_ms, rows[v.name].source = v.summary.median, f"{rows[v.name].source}; re-timed"
    w = paired_winner(final.report) if final is not None else None
    if w is None and best:
        top = rows[best[0]]
        assert top.estimate_ms is not None  # a finalist has its estimate
        w = Winner(top.name, top.estimate_ms)
    if w is not None:
        ref = rows[w.name]
        for r in rows.values():
            if not r.estimate_ms or r.name == w.name:
                continue
            if final is not None and r.name in final.report.samples and w.name in final.report.samples:
                cmp = statistics.compare_shared_rounds(final.report.samples[w.name], final.report.samples[r.name])
                r.vs_winner, r.paired = cmp.ratio, True
            elif ref.estimate_ms:
                r.vs_winner = r.estimate_ms / ref.estimate_ms
    return SweepTiming(rows, final.report if final else None, w, notes, len(batches))


def _times_all(report: BenchReport, names: list[str]) -> bool:
    by = {v.name: v for v in report.variants}
    return bool(names) and all(n in by and by[n].status == "ok" and by[n].summary and not by[n].dropped for n in names)


def local_device() -> str | None:
    """This machine's first visible GPU's name as torch names it ("NVIDIA H200"), without importing torch:
    nvidia-smi; None when there is none (then nothing is looked up in the database)."""
    if shutil.which("nvidia-smi") is None:
        return None
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip() or "0"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", visible],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    name = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    return name or None


def time_together(
    base, launch, configs: dict[str, dict], *, max_seconds: float = 20.0, duty: float = 0.5, precision: float = 0.003
) -> BenchReport:
    """Named configs (axis values on top of the base job, as a sweep makes them) timed in one batch, as the
    finalists' re-time is: the same interleaved, L2-flushed rounds, so any two compare pairwise (versus)
    without another batch's noise or another GPU's difference. Needs this machine's GPU."""
    variants = []
    for name, values in configs.items():
        job = vary(base, values, "--axis")
        variants.append(Variant(name, job.spec, job.settings))
    return bench.run(variants, launch, max_seconds=max_seconds, duty=duty, precision=precision)


def versus(report: BenchReport, a: str, b: str) -> statistics.Comparison | None:
    """b against a over the rounds both ran: ratio t_b / t_a with its 95 % CI (None: one was not timed)."""
    sa, sb = report.samples.get(a), report.samples.get(b)
    if not sa or not sb:
        return None
    return statistics.compare_shared_rounds(
        sa, sb, margin=report.margin, tick_ms=report.tick_ms, runs=report.runs_per_round
    )
