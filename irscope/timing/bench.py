"""Timing on a real GPU: variants of one kernel, identical inputs, interleaved rounds, honest statistics.

The method, in order:
  0. start     the timing process (TimingSession) first: torch and a CUDA context take seconds to
               come up, and they do while the parent compiles
  1. compile   every variant with irscope's own compile path (the code that was dumped is the code
               that runs); a compile failure is reported for that variant and the others go on
  2. preflight each variant, as soon as it compiled, launched once in the timing process, so an
               illegal address or launch failure, which poisons a CUDA context, is reported for that
               variant and a new process measures the others
  3. inputs    made once from a seed; the tensors a variant writes are restored from the pristine
               inputs before every run (so a kernel that writes its inputs sees the same data each time)
  4. check     each variant's outputs against the baseline's (tolerance by dtype); a variant that
               computes something else is flagged and never reported as a win
  5. time      warm-up, then rounds: in each round every variant runs, in mirrored order (ABBA), each run
               preceded by an L2 flush (a 256 MiB write) and bracketed by CUDA events (or, asked for,
               inside CUDA graphs); a kernel under 20 us is timed in batches (an untimed launch, then K
               launches back to back between the events: hot L2), the GPU then left idle as long (50 % duty: below the power
               limit); rounds run below 95 % of the median SM clock are dropped (NVML); rounds continue until the confidence interval of every ratio to the baseline
               is within the requested precision, or the time budget is spent; a sweep drops
               variants that are clearly slower than its leader
  6. report    per variant: median, IQR, 95 % CI; against the baseline: the paired ratio with its CI
               and a verdict within an equivalence margin (same / faster / slower / ambiguous,
               statistics.py); against a --ref (a torch call timed in the same rounds) the ratio and
               its CI; the clocks seen; optional TFLOP/s, GB/s and fraction of the device's peak

Where each step lives: plan.py (the variants and the launch of a request), session.py (0, 2: the
parent's side of the timing process), gpu_process.py (2, 3, 4: the process), measure.py (5),
statistics.py (6), this module (1, 6, and run(): the whole method).
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

from irscope import adapter
from irscope.compile import compiler
from irscope.errors import BadInput, CompileFailure
from irscope.kernel.hardware import by_device_name
from irscope.kernel.targets import local_gpu_present
from irscope.timing import statistics as timing
from irscope.timing.launch import Launch, TensorSpec, evaluate
from irscope.timing.measure import MAX_BATCH
from irscope.timing.reference import Reference
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant


@dataclass
class VariantReport:
    name: str
    options: dict[str, Any]
    status: str
    reason: str
    summary: timing.Summary | None
    versus_baseline: timing.Comparison | None
    tflops: float | None = None
    gbps: float | None = None
    peak_fraction: float | None = None
    dropped: str = ""
    versus_reference: timing.Comparison | None = None  # t_variant / t_ref (--ref): below 1, the kernel is faster


@dataclass
class BenchReport:
    device: str
    triton_version: str
    rounds: int
    seconds: float
    precision_target: float
    variants: list[VariantReport]
    method: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)  # per variant, ms, in round order
    phases: dict[str, float] = field(default_factory=dict)  # the timing process's seconds, by phase
    reference: str = ""  # the variant every versus_baseline is against
    margin: float = timing.DEFAULT_MARGIN  # the equivalence margin of the verdicts
    runs_per_round: int = 1  # runs of each variant a round; a sample is their mean
    tick_ms: float = 0.0  # the timer's tick seen in the run times (0: continuous)
    rounds_run: int = 0  # rounds run, including those dropped for a low clock
    clocks: dict[str, Any] = field(default_factory=dict)  # clocks.ClockReport as a dict
    ref: VariantReport | None = None  # --ref: the torch call timed in the same rounds
    batch: int = 1  # launches back to back between one pair of events in each run (a sample: per launch)


def require_gpu() -> None:
    """Timings need a real GPU: say so in one line (exit 2) rather than simulate anything.

    Asked without importing torch (seconds): the timing process imports it, in parallel.
    """
    if importlib.util.find_spec("torch") is None:
        raise BadInput(
            "timing needs a GPU and torch: torch is not installed here (pip install torch: the build for this GPU)"
        )
    if not local_gpu_present():
        raise BadInput(
            "timing needs a GPU: no CUDA/ROCm device is visible on this machine "
            "(irscope dump and diff work without one; bench and diff --time do not)"
        )


def compile_variants(variants: list[Variant]) -> None:
    """Compile in the parent, where a compile failure is reported for its variant alone.

    Triton's cache may serve a binary (fresh=False) and no SASS is made: the timing process
    takes the binary from that cache, and only the binary matters here.
    """
    for v in variants:
        try:
            v.art = compiler.compile_spec(v.spec, v.settings, fresh=False, with_sass=False)
        except (CompileFailure, BadInput) as e:
            v.status, v.reason = "compile failed", str(e)


# ---------------------------------------------------------------- report


def _unique_names(variants: list[Variant]) -> None:
    """Results are keyed by name: the same --try twice becomes 'X' and 'X #2'."""
    seen: dict[str, int] = {}
    for v in variants:
        seen[v.name] = seen.get(v.name, 0) + 1
        if seen[v.name] > 1:
            v.name = f"{v.name} #{seen[v.name]}"


def device_peaks(name: str):
    """(chip key, (TFLOP/s 16-bit, TFLOP/s tf32, TFLOP/s fp8, TB/s HBM)) of the device, from the chip table."""
    chip = by_device_name(name)
    if chip is None:
        return None, None
    return chip.key.upper(), (chip.tflops_16, chip.tflops_tf32, chip.tflops_fp8, chip.hbm_tbps)


def _throughput(row: VariantReport, flops: float | None, nbytes: float | None, peaks, dtype: str) -> None:
    """TFLOP/s, GB/s and the fraction of the device's peak from the row's median."""
    assert row.summary is not None, "called for rows with a summary"
    secs = row.summary.median / 1e3
    if flops:
        row.tflops = flops / secs / 1e12
        if peaks:
            peak = {"fp16": peaks[0], "bf16": peaks[0], "fp32": peaks[1], "fp8e4nv": peaks[2], "fp8e5": peaks[2]}.get(
                dtype
            )
            row.peak_fraction = row.tflops / peak if peak else None
    if nbytes:
        row.gbps = nbytes / secs / 1e9
        if peaks and not flops:
            row.peak_fraction = row.gbps / (peaks[3] * 1e3)


def report(  # noqa: PLR0913
    variants: list[Variant],
    launch: Launch,
    measurement: dict[str, Any],
    seconds: float,
    precision: float,
    flops_expr: str | None,
    bytes_expr: str | None,
    device: str,
    against_leader: bool = False,
    margin: float = timing.DEFAULT_MARGIN,
    ref: Variant | None = None,
) -> BenchReport:
    """The per-variant rows; ratios against the baseline (the first variant), or for a sweep the leader;
    with a reference, each row's ratio to it too (the reference's own row apart: never a winner)."""
    import triton

    _, peaks = device_peaks(device)
    tick, runs = measurement.get("tick_ms", 0.0), measurement.get("runs_per_round", 1)
    batch = measurement.get("batch", 1)
    env = dict(launch.args)
    flops = evaluate(flops_expr, env, "--flops") if flops_expr else None
    nbytes = evaluate(bytes_expr, env, "--bytes") if bytes_expr else None
    dtype = next((a.dtype for a in launch.args.values() if isinstance(a, TensorSpec)), "fp32")
    rows = []
    base = next((v for v in variants if v.status == "ok" and v.samples_ms), None)
    if against_leader:  # a sweep: ratios against the fastest config timed to the end, not config #0
        finalists = [v for v in variants if v.status == "ok" and v.samples_ms and not v.dropped]
        base = min(finalists, key=lambda v: timing.median(v.samples_ms), default=base)
    how = {"margin": margin, "tick_ms": tick, "runs": runs, "batch": batch}
    ref_ok = ref is not None and bool(ref.samples_ms)
    for v in variants:
        summary = timing.summarize(v.samples_ms, tick_ms=tick / batch) if v.samples_ms else None
        vs = None
        if summary and base is not None and v is not base:
            vs = timing.compare_shared_rounds(base.samples_ms, v.samples_ms, **how)
        row = VariantReport(v.name, dict(v.settings.options), v.status, v.reason, summary, vs, dropped=v.dropped)
        if summary:
            _throughput(row, flops, nbytes, peaks, dtype)
            if ref_ok and ref is not None:
                row.versus_reference = timing.compare_shared_rounds(ref.samples_ms, v.samples_ms, **how)
        rows.append(row)
    ref_row = None
    if ref is not None:
        ref_row = VariantReport(
            ref.name,
            {},
            ref.status,
            ref.reason,
            timing.summarize(ref.samples_ms, tick_ms=tick / batch) if ref_ok else None,
            None,
        )
        if ref_row.summary:
            _throughput(ref_row, flops, nbytes, peaks, dtype)
    samples = {
        v.name: list(v.samples_ms) for v in variants + ([ref] if ref_ok and ref is not None else []) if v.samples_ms
    }
    return BenchReport(
        device,
        triton.__version__,
        measurement.get("rounds", 0),
        seconds,
        precision,
        rows,
        measurement.get("method", ""),
        samples,
        measurement.get("phases", {}),
        base.name if base else "",
        margin,
        runs,
        tick,
        measurement.get("rounds_run", 0),
        measurement.get("clocks", {}),
        ref_row,
        batch,
    )


def run(  # noqa: PLR0913
    variants: list[Variant],
    launch: Launch,
    *,
    seed: int = 0,
    flops: str | None = None,
    nbytes: str | None = None,
    precision: float = 0.005,
    max_seconds: float = 20.0,
    min_rounds: int = 20,
    graph: str = "off",
    prune: float | None = None,
    duty: float = 0.5,
    session: TimingSession | None = None,
    compiled: bool = False,
    ref: Reference | None = None,
    margin: float = timing.DEFAULT_MARGIN,
    batch: int | str = "auto",
    progress: Any = None,
) -> BenchReport:
    """Time the variants; the first is the baseline.

    session: a TimingSession started early by the caller (so torch comes up while it parses and
    compiles); compiled=True: the caller compiled the variants and handed them to the session
    (a sweep, as each config finished). Without a session, one is started here. ref: a torch call
    (reference.parse) timed in the same rounds; a caller that starts the session itself passes it
    to session.start instead. margin: the equivalence margin of the verdicts (a fraction). batch: launches
    a sample (measure.batch_size: "auto" batches kernels under 20 us; 1: one launch a sample).
    progress(what): the terminal's spinner (views/progress.Reporter) through the compiles and the rounds
    (the rounds run in the GPU process: the spinner says the phase and the time budget, not each round).
    """
    check_margin(margin)
    require_gpu()
    _unique_names(variants)
    own = session is None
    session = session or TimingSession()
    try:
        if session.launch is None:
            session.start(
                launch,
                ref=ref,
                seed=seed,
                precision=precision,
                max_seconds=max_seconds,
                min_rounds=min_rounds,
                graph=graph,
                prune=prune,
                duty=duty,
                batch=batch,
            )
        what = f"timing {len(variants)} variant{'s' if len(variants) != 1 else ''} in interleaved rounds"
        with progress(what) if progress is not None else contextlib.nullcontext(lambda *a: None) as step:
            if not compiled:
                launcher_built = False
                for v in variants:
                    step(f"compiling {v.name}", 0)
                    compile_variants([v])
                    if v.status == "ok":
                        session.add(v)
                        if not launcher_built:  # what the first launch would build, while the child starts
                            adapter.prebuild_launcher(v.art.compiled)
                            launcher_built = True
            start = time.perf_counter()
            budget = 120 + 30 * len(variants) + max_seconds * 2
            step(f"rounds on the GPU until the intervals are tight, at most {max_seconds:g} s", 0)
            device, result = session.finish(variants, budget)
    finally:
        if own:
            session.close()
    for v in variants:
        if v.name in result.get("variants", {}) and v.status == "ok":
            v.status, v.reason, v.samples_ms, v.dropped = result["variants"][v.name]
    ref_variant = None
    if session.ref is not None:
        ref_variant = Variant.of_reference(session.ref)
        if result.get("ref") and result["ref"][2]:
            ref_variant.name, ref_variant.reason, ref_variant.samples_ms = result["ref"]
        else:
            ref_variant.status, ref_variant.reason = "not timed", "no variant was timed"
    return report(
        variants,
        launch,
        result,
        time.perf_counter() - start,
        precision,
        flops,
        nbytes,
        device,
        against_leader=session.measure_kwargs.get("prune") is not None,
        margin=margin,
        ref=ref_variant,
    )


def check_margin(margin: float) -> None:
    """--margin: a fraction from 0 (any difference counts) to below 1."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise BadInput(
            f"--margin {margin!r}: the equivalence margin is a fraction from 0 to below 1, e.g. --margin 0.01 (+-1 %)"
        )


def parse_batch(text: str) -> int | str:
    """--batch: 'auto' or a count of launches a sample from 1 to measure.MAX_BATCH."""
    if str(text).strip().lower() == "auto":
        return "auto"
    try:
        n = int(str(text).strip())
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_BATCH:
        raise BadInput(f"--batch {text!r}: give auto, or the launches a sample from 1 (off) to {MAX_BATCH}")
    return n
