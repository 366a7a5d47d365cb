"""Statistics for GPU timings: medians with distribution-free confidence intervals, paired ratios, verdicts.

Pure Python (no torch, no numpy) so that it is tested on the CPU with known samples.

Why these choices:
- Kernel times are skewed (clock boosts, a stray preemption): medians, not means.
- Variants are timed interleaved, round by round, so round i of A and round i of B saw the same clock
  and thermal state. The comparison therefore uses the *paired* ratios t_B,i / t_A,i, whose spread
  is far smaller than that of either variant alone.
- The confidence interval of a median is the distribution-free one from order statistics (the
  binomial(n, 1/2) quantiles), which needs no assumption about the shape of the distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist


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


def summarize(samples_ms: list[float], confidence: float = 0.95) -> Summary:
    lo, hi = median_ci(samples_ms, confidence)
    return Summary(len(samples_ms), median(samples_ms), quantile(samples_ms, 0.25), quantile(samples_ms, 0.75),
                   lo, hi)


@dataclass
class Comparison:
    """B against A from paired rounds: ratio = t_B / t_A (below 1: B is faster)."""

    ratio: float
    ci_low: float
    ci_high: float
    verdict: str        # "faster" | "slower" | "no significant difference"

    @property
    def delta_percent(self) -> float:
        return (self.ratio - 1) * 100

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def compare(a_ms: list[float], b_ms: list[float], confidence: float = 0.95) -> Comparison:
    if len(a_ms) != len(b_ms):
        raise ValueError("paired comparison needs the same number of rounds for both variants")
    ratios = [b / a for a, b in zip(a_ms, b_ms)]
    lo, hi = median_ci(ratios, confidence)
    return Comparison(median(ratios), lo, hi, verdict(lo, hi))


def compare_shared_rounds(a_ms: list[float], b_ms: list[float], confidence: float = 0.95) -> Comparison:
    """compare() over the rounds both variants ran: a sweep stops timing a dropped variant early,
    and round i of each is the same round, so the common prefix is what pairs."""
    n = min(len(a_ms), len(b_ms))
    return compare(a_ms[:n], b_ms[:n], confidence)


def verdict(ci_low: float, ci_high: float) -> str:
    """B's verdict against A from the CI of t_B/t_A: only a CI that excludes 1 is a difference."""
    if ci_high < 1:
        return "faster"
    if ci_low > 1:
        return "slower"
    return "no significant difference"


def precise_enough(a_ms: list[float], b_ms: list[float], target_half_width: float,
                   confidence: float = 0.95) -> bool:
    """True once the ratio's CI half-width (as a fraction) is within the target."""
    if len(a_ms) < 10:
        return False
    return compare(a_ms, b_ms, confidence).half_width <= target_half_width
