"""Statistics for GPU timings: medians, paired ratios with honest confidence intervals, verdicts.

Pure Python (no torch, no numpy) so that it is tested on the CPU with simulated samples.

Why these choices:
- Kernel times are skewed (clock boosts, a stray preemption): per variant, medians with the
  distribution-free CI from order statistics (binomial(n, 1/2) quantiles).
- Variants are timed interleaved, so round i of A and round i of B saw the same clock and thermal
  state: comparisons use the *paired* log-ratios log(t_B,i / t_A,i), whose spread is far smaller
  than that of either variant alone.
- measure.py runs rounds in mirrored pairs (round 2k in one order, 2k+1 in the reverse), so a
  position effect (the first run after the idle gap, a clock ramp inside a round) adds to one round
  of a pair and subtracts from the other: the pair's mean log-ratio (a block) cancels it. The CI is
  over blocks, not rounds, so that effect is neither a bias nor counted as noise.
- The ratio's CI is Yuen's: the 20 % trimmed mean of the blocks with the winsorized standard error
  and Student's t (calibrated: CALIBRATION). A median CI on quantized samples is what gave zero-width intervals ("[+0.000,
  +0.000]") and false verdicts on a 3.6 us kernel timed in 32 ns ticks: the median sticks to a tick,
  a mean of dithered ticks does not. The timer's quantization (one tick, uniform) is added to the
  variance, so no interval has zero width while the timer has a resolution.
- Verdicts as nvbench's: same (the CI inside the equivalence margin, default +-1 %), faster or
  slower (the CI wholly beyond it), ambiguous (the CI straddles a margin). A difference smaller
  than one timer tick on this kernel is not claimed: the margin is at least the timer's resolution,
  and the note says "below resolution: 32 ns ticks on a 3.6 us kernel". A batched sample (measure.py:
  K launches between one pair of events) is known to tick / K: compare(batch=K).
- Ties: with few blocks the CI is the range of the ratios widened by one tick each side; when the
  timer's tick is unknown and every ratio is the same, the quantum is the smallest step between
  the sample values (or CUDA events' documented 0.5 us): quantized samples never give a
  zero-width interval.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist

DEFAULT_MARGIN = 0.01  # equivalence margin of a ratio: within +-1 % is "same"
TRIM = 0.2  # Yuen's trimmed mean: 20 % off each end
MIN_BLOCKS = 6  # fewer blocks: the CI is the whole range of the ratios (nothing narrower is honest)
CALIBRATION = 0.01  # Yuen's 95 % interval runs liberal (5.5-6 % misses for 10-60 samples, Gaussian or
# simulated GPU noise: tests/test_timing_statistics.py); its 96 % one misses <= 5 %
MIN_PRECISE_ROUNDS = 32  # stopping once the CI looks narrow after fewer rounds inflates the A/A rate (~6.5 %)


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no samples")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2


def quantile(xs: list[float], q: float) -> float:
    """Linear-interpolated quantile (as numpy's default)."""
    s = sorted(xs)
    if not s:
        raise ValueError("quantile of no samples")
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median_ci(xs: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free CI of the median: order statistics k and n-k+1 of the sorted sample.

    Uses the normal approximation of binomial(n, 1/2); for fewer than 6 samples the CI is
    the whole range (nothing narrower is honest).
    """
    s = sorted(xs)
    n = len(s)
    if n < 6:
        return s[0], s[-1]
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return s[lo], s[hi]


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (Cornish-Fisher expansion, A&S 26.7.5: within 1e-3 for df >= 3)."""
    z = NormalDist().inv_cdf(p)
    if df <= 0 or math.isinf(df):
        return z
    df = max(df, 1.0)
    z3, z5, z7, z9 = z**3, z**5, z**7, z**9
    return (
        z
        + (z3 + z) / (4 * df)
        + (5 * z5 + 16 * z3 + 3 * z) / (96 * df**2)
        + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df**3)
        + (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df**4)
    )


def trimmed_mean_ci(xs: list[float], confidence: float = 0.95, extra_var: float = 0.0) -> tuple[float, float, float]:
    """(trimmed mean, low, high): Yuen's CI, robust to the stray slow sample; extra_var adds to the
    variance of the mean (the timer's quantization)."""
    s = sorted(xs)
    n = len(s)
    g = int(TRIM * n)
    h = n - 2 * g
    kept = s[g : n - g]
    tm = sum(kept) / h
    wins = [s[g]] * g + kept + [s[n - g - 1]] * g
    wm = sum(wins) / n
    sw2 = sum((x - wm) ** 2 for x in wins) / (n - 1)
    se = math.sqrt((n - 1) * sw2 / (h * (h - 1)) + extra_var)
    q = t_quantile(0.5 + min(0.999, confidence + CALIBRATION) / 2, h - 1)
    return tm, tm - q * se, tm + q * se


@dataclass
class Summary:
    """One variant's timings, in milliseconds."""

    n: int
    median: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


def summarize(samples_ms: list[float], confidence: float = 0.95, tick_ms: float = 0.0) -> Summary:
    """Median, quartiles and the median's CI; with a timer tick, the CI widened by half a tick each
    side (a median of quantized samples is only known to the tick)."""
    lo, hi = median_ci(samples_ms, confidence)
    return Summary(
        len(samples_ms),
        median(samples_ms),
        quantile(samples_ms, 0.25),
        quantile(samples_ms, 0.75),
        lo - tick_ms / 2,
        hi + tick_ms / 2,
    )


@dataclass
class Comparison:
    """B against A from paired rounds: ratio = t_B / t_A (below 1: B is faster)."""

    ratio: float
    ci_low: float
    ci_high: float
    verdict: str  # "same" | "faster" | "slower" | "ambiguous"
    margin: float = DEFAULT_MARGIN  # the equivalence margin the verdict used (at least the resolution)
    resolution: float = 0.0  # one timer tick as a fraction of one run of A (0: not quantized)
    note: str = ""  # e.g. "below resolution: 32 ns ticks on a 3.6 us kernel"

    @property
    def delta_percent(self) -> float:
        return (self.ratio - 1) * 100

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def paired_blocks(a_ms: list[float], b_ms: list[float]) -> list[float]:
    """The mean log-ratio of each mirrored pair of rounds (2k, 2k+1); an odd last round is left out."""
    d = [math.log(b / a) for a, b in zip(a_ms, b_ms) if a > 0 and b > 0]
    return [(d[i] + d[i + 1]) / 2 for i in range(0, len(d) - 1, 2)]


def compare(
    a_ms: list[float],
    b_ms: list[float],
    confidence: float = 0.95,
    *,
    margin: float = DEFAULT_MARGIN,
    tick_ms: float = 0.0,
    runs: int = 1,
    batch: int = 1,
) -> Comparison:
    """B against A over paired rounds; tick_ms: the timer's tick, runs: the runs averaged into each sample,
    batch: the launches timed between one pair of events in each run (a sample is per launch, so one
    tick is tick_ms / batch of a sample).

    No interval has zero width: quantized samples carry one tick (uniform) of variance; where the tick
    is unknown (not found in the run times) and the samples do not vary, the quantum is the smallest
    gap between the sample values, or with a single value, CUDA events' documented resolution
    (EVENT_RESOLUTION_MS). A difference smaller than one tick of a sample is never claimed: the margin
    is at least that, and the note says so.
    """
    if len(a_ms) != len(b_ms):
        raise ValueError("paired comparison needs the same number of rounds for both variants")
    if not a_ms:
        raise ValueError("a comparison of no rounds")
    batch = max(1, int(batch))
    blocks = paired_blocks(a_ms, b_ms)
    typical = median(a_ms)
    resolution = tick_ms / batch / typical if tick_ms > 0 and typical > 0 else 0.0
    ratios = [b / a for a, b in zip(a_ms, b_ms) if a > 0]
    if resolution == 0.0 and ratios and max(ratios) == min(ratios) and typical > 0:
        resolution = min(_sample_quantum(a_ms, batch), _sample_quantum(b_ms, batch)) / typical  # ties: not zero width
    if len(blocks) < MIN_BLOCKS:
        ratio, lo, hi = median(ratios), min(ratios), max(ratios)
        lo, hi = lo * math.exp(-resolution), hi * math.exp(resolution)  # the range, give or take one tick
    else:
        # one tick, uniform, in each run: variance r^2/12 per run, per log-ratio of a block (4 samples of
        # `runs` runs, half weight each) r^2/(12 runs), over len(blocks) blocks
        quant = resolution**2 / (12 * max(1, runs)) / len(blocks)
        tm, lo_l, hi_l = trimmed_mean_ci(blocks, confidence, quant)
        ratio, lo, hi = math.exp(tm), math.exp(lo_l), math.exp(hi_l)
    used = max(margin, resolution)
    note = ""
    below = resolution > 0 and (lo > 1 or hi < 1) and abs(math.log(ratio)) < resolution
    if resolution > margin or below:
        where = (
            f"below resolution: {tick_ms * 1e6:.0f} ns ticks on a {typical * 1e3:.1f} us kernel"
            if tick_ms > 0
            else f"below resolution: samples in steps of {resolution * typical * 1e6:.0f} ns "
            f"on a {typical * 1e3:.1f} us kernel"
        )
        if batch > 1 and tick_ms > 0:
            where += f" ({batch} launches a sample: {tick_ms / batch * 1e6:.2g} ns a launch)"
        if resolution > margin:
            note = f"{where} (margin raised to ±{resolution * 100:.2g}%)"
        else:
            note = (
                f"{where}: the difference, {(ratio - 1) * 100:+.2g}%, is less than one tick (±{resolution * 100:.2g}%)"
            )
    return Comparison(ratio, lo, hi, verdict(lo, hi, used), used, resolution, note)


EVENT_RESOLUTION_MS = 0.0005  # cudaEventElapsedTime: "a resolution of around 0.5 microseconds"


def _sample_quantum(samples_ms: list[float], batch: int) -> float:
    """The step between one variant's sample values: the smallest gap, else (one value) CUDA events'
    documented resolution over the batch."""
    distinct = sorted({round(v, 12) for v in samples_ms})
    gaps = [b - a for a, b in itertools.pairwise(distinct) if b - a > 1e-12]
    return min(gaps) if gaps else EVENT_RESOLUTION_MS / batch


def compare_shared_rounds(a_ms: list[float], b_ms: list[float], confidence: float = 0.95, **kwargs) -> Comparison:
    """compare() over the rounds both variants ran: a sweep stops timing a dropped variant early,
    and round i of each is the same round, so the common prefix is what pairs."""
    n = min(len(a_ms), len(b_ms))
    return compare(a_ms[:n], b_ms[:n], confidence, **kwargs)


def verdict(ci_low: float, ci_high: float, margin: float = DEFAULT_MARGIN) -> str:
    """B's verdict against A from the CI of t_B/t_A and the equivalence margin (a fraction).

    same: the CI inside [1 - margin, 1 + margin]; faster/slower: wholly beyond it; ambiguous: the CI
    straddles a margin (more rounds, or a wider margin, would decide).
    """
    if ci_high < 1 - margin:
        return "faster"
    if ci_low > 1 + margin:
        return "slower"
    if ci_low >= 1 - margin and ci_high <= 1 + margin:
        return "same"
    return "ambiguous"


def precise_enough(a_ms: list[float], b_ms: list[float], target_half_width: float, confidence: float = 0.95) -> bool:
    """True once the ratio's CI half-width (as a fraction) is within the target (never before
    MIN_PRECISE_ROUNDS rounds: an early narrow-looking interval is often an underestimate)."""
    if len(a_ms) < MIN_PRECISE_ROUNDS:
        return False
    return compare(a_ms, b_ms, confidence).half_width <= target_half_width


def timer_tick(values_ms: list[float]) -> float:
    """The timer's quantum seen in raw run times (ms), 0.0 when they look continuous.

    CUDA events on the H100/H200 count in 32 ns ticks: every run time is a multiple of it, so
    the gaps between the distinct values are multiples of the smallest gap.
    """
    distinct = sorted({round(v, 9) for v in values_ms})
    gaps = [b - a for a, b in itertools.pairwise(distinct) if b - a > 1e-8]
    if len(gaps) < 3:
        return 0.0
    tick = min(gaps)
    on_grid = sum(abs(g / tick - round(g / tick)) < 0.1 for g in gaps)
    return tick if on_grid >= 0.9 * len(gaps) and tick > 1e-6 else 0.0
