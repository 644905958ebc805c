"""Relative QPS with honest intervals.

Variants are interleaved within a round, so round i of the base and round i of
a variant ran under the same conditions: the unit of evidence is the per-round
ratio r_i = QPS(variant, i) / QPS(base, i). The estimate is the geometric mean
of those ratios, and its 95% interval a Student-t interval on log(r_i),
transformed back. With the handful of rounds a benchmark can afford (3-10), a
bootstrap over rounds under-covers badly (with 2 rounds its interval is just
the two ratios), while the t interval widens as it should. An interval that
contains 1.0 means "no difference".

The same is computed for server CPU time per query (base / variant, so that
> 1 means the variant is better, like rQPS), which is steadier than wall-clock
QPS on a machine where client round trips dominate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _scipy_stats

CONFIDENCE = 0.95


@dataclass
class Estimate:
    value: float
    low: float | None
    high: float | None
    rounds: int

    @property
    def no_difference(self) -> bool:
        return self.low is None or (self.low <= 1.0 <= self.high)

    def verdict(self) -> str:
        if self.low is None:
            return "too few rounds"
        if self.no_difference:
            return "no difference"
        return "faster" if self.value > 1 else "slower"

    def fmt(self) -> str:
        if self.low is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def log_t_interval(log_values: np.ndarray, confidence: float = CONFIDENCE) -> Estimate:
    """Geometric mean and t interval of per-round ratios given as logarithms."""
    n = len(log_values)
    mean = float(np.mean(log_values))
    if n < 2:
        return Estimate(float(np.exp(mean)), None, None, n)
    sem = float(np.std(log_values, ddof=1) / np.sqrt(n))
    half = float(_scipy_stats.t.ppf(0.5 + confidence / 2, df=n - 1)) * sem
    return Estimate(float(np.exp(mean)), float(np.exp(mean - half)), float(np.exp(mean + half)), n)


def ratio_estimate(variant: list[float], base: list[float], confidence: float = CONFIDENCE) -> Estimate:
    """Paired by round: variant[i] and base[i] ran in the same round."""
    v, b = np.asarray(variant, float), np.asarray(base, float)
    if len(v) != len(b) or len(v) == 0:
        raise ValueError("need the same, non-zero number of rounds for variant and base")
    return log_t_interval(np.log(v / b), confidence)


def summary_estimate(per_micro_variant: list[list[float]], per_micro_base: list[list[float]],
                     how: str = "avg", confidence: float = CONFIDENCE) -> Estimate:
    """avg or median over microbenchmarks of the per-round ratios, round by round
    (round i of every microbenchmark kept together), then the same t interval."""
    agg = np.mean if how == "avg" else np.median
    rounds = min(len(r) for r in per_micro_variant)
    v = np.array([r[:rounds] for r in per_micro_variant], float)
    b = np.array([r[:rounds] for r in per_micro_base], float)
    per_round = agg(v / b, axis=0)          # one summary ratio per round
    return log_t_interval(np.log(per_round), confidence)


def group_summary(values: list[float]) -> dict[str, float]:
    """min, max, avg, median: the shape of the published per-group tables."""
    a = np.asarray(values, float)
    return {"min": float(a.min()), "max": float(a.max()), "avg": float(a.mean()), "median": float(np.median(a))}


def spread(values: list[float]) -> dict[str, float]:
    """How noisy one series is: relative spread (max-min)/median and coefficient of variation."""
    a = np.asarray(values, float)
    med = float(np.median(a))
    return {"median": med, "rel_range": float((a.max() - a.min()) / med) if med else 0.0,
            "cv": float(a.std(ddof=1) / a.mean()) if len(a) > 1 and a.mean() else 0.0}
