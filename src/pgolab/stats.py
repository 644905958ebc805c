"""Relative performance with intervals that hold on a noisy machine.

The unit of evidence is a paired log ratio: in block b of server instance i, every
target ran the microbenchmark back to back, so y = log(variant / base) (or
log(base / variant) for a figure where lower is better) cancels the machine-speed
drift they shared. Per microbenchmark the estimate is the geometric mean of those
ratios: the mean over instances of each instance's mean log ratio.

Two kinds of noise enter an estimate, and both must be in its interval:

- block to block within one instance pair (drift between two slices a few seconds
  apart): the within-instance variance s_e², from the microbenchmark's own blocks;
- instance to instance (two servers of the same binary can differ by several per cent
  for their whole life): the variance component s_u² of the instance means. Each
  microbenchmark has only a few instances, so s_u² is pooled over the suite's
  microbenchmarks, with the degrees of freedom that pooling gives. A microbenchmark whose
  instances spread far more than that pool allows is left out of it and carries its own.

Var(per-micro estimate) = (1/R²) Σ_i (s_u² + s_e²/n_i), combined by Satterthwaite.
A suite or group summary is the geometric mean over microbenchmarks: the mean of
their log estimates, with Var = Σ Var_m / M² (microbenchmarks are measured on
separate instances, so independent), again with Satterthwaite degrees of freedom.
With one instance per microbenchmark s_u² cannot be estimated; the interval then
covers block noise only, and the report says so.

A deterministic figure (cost mode: callgrind's counts on a simulated machine) is measured once per
read-only test and a few times per test that writes; its interval is the recipe's repeatability
bound, an assumption taken as known, combined with the variance of the repeats. Its estimate
carries the bound and no degrees of freedom: the df of such a combination (10^4 to 10^7) only
says the bound dominates.

Verdicts: "faster"/"slower" when the 95% interval excludes 1.0 ("cheaper"/"costlier" for a
figure of the cost model: it is not a speed); "same" when the 90% interval lies inside the
equivalence margin (two one-sided tests at 5%, TOST); "inconclusive" otherwise. The same
estimate, standard error and df give each verdict's p-values, and `adjusted_verdicts` the
verdicts of a whole table's column under Holm's step-down correction. `sensitivity` says whether a
summary's verdict survives its excluded blocks put back and each of its tests left out.

Outliers are blocks whose paired log ratio has a robust z-score (against its instance's median,
over a MAD never below the run's) beyond OUTLIER_Z; the scheduler re-measures them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy import special as _special

CONFIDENCE = 0.95
EQUIVALENCE_MARGIN = 0.02      # "same" when the effect is inside ±2 %
# Stricter than Iglewicz and Hoaglin's 3.5: the centre is the median of a small instance (2-8
# blocks), which makes residuals look tighter, and a block is excluded when any of its targets'
# ratios stands out. With 6 targets, 3-4 blocks per instance and robust_scale's lower bound, 6 flags
# none of 2,100 clean normal blocks and finds a 20 % deviation among 2 % noise (tests/test_stats.py);
# the 3.5x round the audit found scores about 80.
OUTLIER_Z = 6.0
OUTLIER_MAD_FLOOR = 0.005      # a deviation under ~4.5 % is never an outlier, even when MAD is ~0
OUTLIER_MIN_BLOCKS = 5
STANDS_OUT_FAMILY_P = 0.05    # chance that any test of a suite with one s_u² is taken out of the pool
SPEED_WORDS = ("faster", "slower")      # a figure measured on the machine (QPS, CPU time per query)
COST_WORDS = ("cheaper", "costlier")    # a figure of the cost model (a bound estimate): never "faster"
CLAIMS = SPEED_WORDS + COST_WORDS        # verdicts that say the variant differs


@dataclass(frozen=True)
class Observation:
    """One paired log ratio: instance i, block b of one microbenchmark."""
    instance: int
    block: int
    log_ratio: float


def _t_quantile(p: float, df: float) -> float:
    """Student's t quantile (scipy.stats.t.ppf's own function, without its per-call overhead: the
    leave-one-out checks and the simulations ask for hundreds of thousands)."""
    return float(_special.stdtrit(df, p))


def _t_tail(x: float, df: float) -> float:
    """P(T > x) for Student's t with df degrees of freedom (scipy.stats.t.sf's own function)."""
    return float(_special.stdtr(df, -x))


@dataclass(frozen=True)
class Estimate:
    value: float               # geometric mean ratio, > 1 is better for the variant
    low: float | None          # 95 % interval (None: not estimable)
    high: float | None
    n: int                     # paired observations behind it
    df: float | None = None    # the interval's t degrees of freedom; None for a bound estimate
    log_se: float | None = None
    margin: float = EQUIVALENCE_MARGIN
    # A bound estimate (a deterministic figure): the repeatability bound (±, relative, as a 95 %
    # bound) in its interval. Its t quantiles use `bound_df`, Satterthwaite's df between the bound,
    # taken as known, and the repeats: how the interval is computed, not a sample size to report.
    bound: float | None = None
    bound_df: float | None = None

    @property
    def half_width(self) -> float | None:
        """Relative 95 % half-width, e.g. 0.03 for ±3 %."""
        if self.low is None:
            return None
        return (self.high - self.low) / 2 / self.value

    @property
    def words(self) -> tuple[str, str]:
        """What a ratio above and below 1 is called: a cost-model figure is cheaper, never faster."""
        return COST_WORDS if self.bound is not None else SPEED_WORDS

    @property
    def _t_df(self) -> float | None:
        return self.bound_df if self.bound is not None else self.df

    def interval(self, confidence: float) -> tuple[float, float] | None:
        if self.log_se is None or self._t_df is None:
            return None
        if self.log_se == 0:
            return self.value, self.value
        t = _t_quantile(0.5 + confidence / 2, self._t_df)
        center = math.log(self.value)
        return math.exp(center - t * self.log_se), math.exp(center + t * self.log_se)

    def verdict(self) -> str:
        if self.low is None:
            return "inconclusive"
        better, worse = self.words
        if self.low > 1.0:
            return better
        if self.high < 1.0:
            return worse
        tost = self.interval(1 - 2 * (1 - CONFIDENCE))     # the 90 % interval
        if tost and tost[0] >= 1 / (1 + self.margin) and tost[1] <= 1 + self.margin:
            return "same"
        return "inconclusive"

    def p_value(self) -> float | None:
        """Two-sided p of 'the ratio is 1', from the estimate, standard error and df of the interval:
        below 1 − CONFIDENCE exactly when the 95 % interval excludes 1. None without an interval."""
        if self.log_se is None or self._t_df is None or self.low is None:
            return None
        center = math.log(self.value)
        if self.log_se == 0:
            return 0.0 if center else 1.0
        return 2 * _t_tail(abs(center) / self.log_se, self._t_df)

    def equivalence_p(self) -> float | None:
        """p of the two one-sided tests of 'the effect lies outside ±margin' (TOST): at most
        1 − CONFIDENCE exactly when the 90 % interval lies inside the margin."""
        if self.log_se is None or self._t_df is None or self.low is None:
            return None
        center, edge = math.log(self.value), math.log(1 + self.margin)
        if self.log_se == 0:
            return 0.0 if abs(center) < edge else 1.0
        return max(_t_tail((center + edge) / self.log_se, self._t_df),
                   _t_tail((edge - center) / self.log_se, self._t_df))

    def fmt(self) -> str:
        if self.low is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _t_estimate(mean_log: float, variance: float | None, df: float | None, n: int,
                margin: float = EQUIVALENCE_MARGIN, bound: float | None = None) -> Estimate:
    """The estimate exp(mean_log) with its t interval; with a `bound`, a bound estimate whose df is
    kept apart (bound_df) and never reported."""
    def made(low, high, dof, se):
        if bound is None:
            return Estimate(math.exp(mean_log), low, high, n, dof, se, margin)
        return Estimate(math.exp(mean_log), low, high, n, None, se, margin, bound, dof)
    if variance is None or df is None or df <= 0 or not math.isfinite(df):
        if variance == 0.0:
            return made(math.exp(mean_log), math.exp(mean_log), math.inf, 0.0)
        return made(None, None, None, None)
    se = math.sqrt(max(variance, 0.0))
    half = _t_quantile(0.5 + CONFIDENCE / 2, df) * se
    return made(math.exp(mean_log - half), math.exp(mean_log + half), df, se)


def satterthwaite(terms: list[tuple[float, float]]) -> float | None:
    """Degrees of freedom of Σ v_k, where each v_k is a variance estimate with df_k."""
    total = sum(v for v, _ in terms)
    denominator = sum(v * v / d for v, d in terms if d and d > 0 and v > 0)
    if total <= 0:
        return math.inf
    if denominator == 0:
        return None
    return total * total / denominator


@dataclass
class MicroData:
    """The paired log ratios of one variant on one microbenchmark, by instance. Filled once (`of`);
    its sums are kept, for the leave-one-out estimates ask them of every test many times."""
    by_instance: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, observations: list[Observation]) -> "MicroData":
        data = cls()
        for o in sorted(observations, key=lambda o: (o.instance, o.block)):
            data.by_instance[o.instance].append(o.log_ratio)
        return data

    @property
    def n(self) -> int:
        return sum(len(v) for v in self.by_instance.values())

    def mean_weight(self) -> float:
        """Var(mean of instance means) per unit of block variance: Σ 1/n_i / R²."""
        r = len(self.by_instance)
        return sum(1 / len(v) for v in self.by_instance.values()) / (r * r)

    def instance_means(self) -> list[float]:
        if "means" not in self._memo:
            self._memo["means"] = [float(np.mean(v)) for v in self.by_instance.values()]
        return list(self._memo["means"])

    def mean(self) -> float:
        if "mean" not in self._memo:
            self._memo["mean"] = float(np.mean(self.instance_means()))
        return self._memo["mean"]

    def within(self) -> tuple[float, int]:
        """Sum of squares within instances and its degrees of freedom."""
        if "within" not in self._memo:
            ss = sum(float(np.sum((np.asarray(v) - np.mean(v)) ** 2)) for v in self.by_instance.values())
            self._memo["within"] = ss, sum(len(v) - 1 for v in self.by_instance.values())
        return self._memo["within"]

    def between(self) -> tuple[float, int, float]:
        """Sum of squares of instance means around their mean, its df, and mean 1/n_i."""
        means = self.instance_means()
        if len(means) < 2:
            return 0.0, 0, 0.0
        ss = float(np.sum((np.asarray(means) - np.mean(means)) ** 2))
        return ss, len(means) - 1, float(np.mean([1 / len(v) for v in self.by_instance.values()]))


@dataclass(frozen=True)
class InstanceComponent:
    """s_u², the instance-to-instance variance of a log ratio, pooled over microbenchmarks."""
    variance: float | None     # None: no microbenchmark had two instances
    df: float


@dataclass(frozen=True)
class InstanceSpread:
    """What one microbenchmark says about s_u²: the sum of squares of its instance means, and the
    block noise those means carry (E[ss / df] = s_u² + block)."""
    ss: float
    df: int
    block: float
    block_df: int

    @classmethod
    def of(cls, m: MicroData) -> "InstanceSpread":
        ss, df, inv_n = m.between()
        ss_w, df_w = m.within()
        return cls(ss, df, (ss_w / df_w if df_w else 0.0) * inv_n, df_w)

    @property
    def excess(self) -> float:
        return self.ss - self.block * self.df


def _pool(spreads: list[InstanceSpread]) -> InstanceComponent:
    """s_u² from several tests, each weighted by the inverse of its estimate's variance.

    Each test gives y = ss/df - block, unbiased for s_u² with Var ≈ 2 (s_u² + block)² / df. An
    unweighted pool let tests with large block noise (update-inlist's 40 % blocks) pull it to zero:
    in the MariaDB proof one target's pool was 0 (three once scan left it) where the weighted one
    gives 1-2 %. The weights depend on s_u², so iterate from the unweighted estimate. Its degrees
    of freedom are those of a χ² variance estimate as precise: 2 s_u⁴ / Var = s_u⁴ Σw."""
    spreads = [s for s in spreads if s.df]
    if not spreads:
        return InstanceComponent(None, 0)
    df = np.array([s.df for s in spreads], dtype=float)
    block = np.array([s.block for s in spreads])
    y = np.array([s.ss for s in spreads]) / df - block
    variance = max(0.0, float(np.sum(df * y) / np.sum(df)))
    for _ in range(100):
        weights = df / np.maximum(variance + block, 1e-12) ** 2
        updated = max(0.0, float(np.sum(weights * y) / np.sum(weights)))
        converged = abs(updated - variance) <= 1e-9 * max(updated, 1e-12)
        variance = updated
        if converged:
            break
    if variance < 1e-12:      # rounding of identical ratios: no instance effect, and sure of it
        return InstanceComponent(0.0, float(np.sum(df)))
    weights = df / np.maximum(variance + block, 1e-12) ** 2
    return InstanceComponent(variance, float(variance * variance * np.sum(weights)))


def _pools_leaving_each_out(spreads: list[InstanceSpread]) -> list[InstanceComponent]:
    """_pool of every spread but the j-th, for each j at once: the same iteration, row by row (each
    row stops when it converges, as _pool does), so that screening a suite of 41 tests costs one
    pass instead of 41."""
    n = len(spreads)
    df = np.array([s.df for s in spreads], dtype=float)
    block = np.array([s.block for s in spreads])
    y = np.array([s.ss for s in spreads]) / df - block
    others = 1.0 - np.eye(n)
    variance = np.maximum(0.0, (others * df) @ y / ((others * df).sum(axis=1)))
    active = np.ones(n, dtype=bool)
    for _ in range(100):
        weights = others * (df / np.maximum(variance[:, None] + block[None, :], 1e-12) ** 2)
        updated = np.maximum(0.0, weights @ y / weights.sum(axis=1))
        converged = np.abs(updated - variance) <= 1e-9 * np.maximum(updated, 1e-12)
        variance = np.where(active, updated, variance)
        active &= ~converged
        if not active.any():
            break
    weights = others * (df / np.maximum(variance[:, None] + block[None, :], 1e-12) ** 2)
    total_df = (others * df).sum(axis=1)
    return [InstanceComponent(0.0, float(total_df[j])) if variance[j] < 1e-12
            else InstanceComponent(float(variance[j]), float(variance[j] ** 2 * weights[j].sum())) for j in range(n)]


def instance_components(micros: dict[str, MicroData], spreads: dict[str, InstanceSpread] | None = None
                        ) -> tuple[InstanceComponent, dict[str, InstanceComponent]]:
    """The pooled s_u², and the microbenchmarks whose instances differ too much to share it.

    One pool for every test lets a few tests whose instances differ by 10 % or more set every
    test's interval: too wide for the steady ones and too narrow for themselves. A test whose
    instance means spread more than the pool of the others allows (F test, Bonferroni over the
    suite at STANDS_OUT_FAMILY_P, worst first) leaves the pool and carries its own s_u², never below
    the pool's, with its own few degrees of freedom. tests/test_stats.py measures both sides on
    synthetic suites. `spreads`: each test's InstanceSpread when already known."""
    if spreads is None:
        spreads = {k: InstanceSpread.of(m) for k, m in micros.items()}
    pooled = {k: s for k, s in spreads.items() if k in micros and s.df}
    tested = len(pooled)
    apart: dict[str, InstanceSpread] = {}
    while len(pooled) > 1:
        pools = _pools_leaving_each_out(list(pooled.values()))
        p, worst = min((_spread_p(s, pool), k) for (k, s), pool in zip(pooled.items(), pools))
        if p >= STANDS_OUT_FAMILY_P / tested:
            break
        apart[worst] = pooled.pop(worst)
    component = _pool(list(pooled.values()))
    own = {k: InstanceComponent(max(s.excess / s.df, component.variance or 0.0), s.df) for k, s in apart.items()}
    return component, own


def _spread_p(spread: InstanceSpread, pool: InstanceComponent) -> float:
    """P(instance means spread at least this much | the test's s_u² is the pool's)."""
    expected = (pool.variance or 0.0) + spread.block
    if expected <= 0:
        return 0.0 if spread.ss > 0 else 1.0
    dfd = satterthwaite([(pool.variance or 0.0, pool.df), (spread.block, spread.block_df)])
    dfd = 1e9 if dfd is None or not math.isfinite(dfd) else dfd
    return float(_special.fdtrc(spread.df, dfd, spread.ss / spread.df / expected))    # F's survival function


def _pooled_within(micros: list[MicroData]) -> tuple[float, int]:
    ss = df = 0
    for m in micros:
        s, d = m.within()
        ss += s
        df += d
    return (ss / df if df else 0.0), df


def micro_variance(m: MicroData, component: InstanceComponent,
                   fallback_within: tuple[float, int]) -> tuple[float | None, float | None]:
    """Variance of a microbenchmark's mean log ratio and its degrees of freedom."""
    ss_w, df_w = m.within()
    s_e2, df_e = (ss_w / df_w, df_w) if df_w else fallback_within
    if not df_e and not component.df:
        return None, None
    terms = [(s_e2 * m.mean_weight(), df_e)]
    if component.variance is not None:
        terms.append((component.variance / len(m.by_instance), component.df))
    return sum(v for v, _ in terms), satterthwaite(terms)


def micro_estimate(m: MicroData, component: InstanceComponent, fallback_within: tuple[float, int],
                   margin: float = EQUIVALENCE_MARGIN) -> Estimate:
    variance, df = micro_variance(m, component, fallback_within)
    return _t_estimate(m.mean(), variance, df, m.n, margin)


@dataclass
class SuiteEstimates:
    """Per-microbenchmark estimates of one variant and one figure, and summaries over sets of them."""
    micros: dict[str, MicroData]
    component: InstanceComponent
    within: tuple[float, int]
    margin: float = EQUIVALENCE_MARGIN
    tolerance: float | None = None    # deterministic figures: the interval when none can be estimated
    own: dict[str, InstanceComponent] = field(default_factory=dict)   # tests outside the pool
    spreads: dict[str, InstanceSpread] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, observations: dict[str, list[Observation]], margin: float = EQUIVALENCE_MARGIN,
           tolerance: float | None = None) -> "SuiteEstimates":
        micros = {k: MicroData.of(v) for k, v in observations.items() if v}
        return cls._of_micros(micros, margin, tolerance, {k: InstanceSpread.of(m) for k, m in micros.items()})

    @classmethod
    def _of_micros(cls, micros: dict[str, MicroData], margin: float, tolerance: float | None,
                   spreads: dict[str, InstanceSpread]) -> "SuiteEstimates":
        component, own = instance_components(micros, spreads)
        return cls(micros, component, _pooled_within(list(micros.values())), margin, tolerance, own, spreads)

    def without(self, key: str) -> "SuiteEstimates":
        """The same estimator on the suite without one test: its ratios, and its share of every
        pooled variance, gone (a leave-one-out)."""
        micros = {k: m for k, m in self.micros.items() if k != key}
        spreads = self.spreads or {k: InstanceSpread.of(m) for k, m in self.micros.items()}
        return self._of_micros(micros, self.margin, self.tolerance, {k: v for k, v in spreads.items() if k != key})

    def component_of(self, key: str) -> InstanceComponent:
        return self.own.get(key, self.component)

    def micro(self, key: str) -> Estimate:
        if self.tolerance is not None:
            variance, df = self.deterministic_variance([key])
            return _t_estimate(self.micros[key].mean(), variance, df, self.micros[key].n, self.margin, self.tolerance)
        return micro_estimate(self.micros[key], self.component_of(key), self.within, self.margin)

    def deterministic_variance(self, keys: list[str]) -> tuple[float, float | None]:
        """Variance of the mean log ratio over `keys` for a deterministic figure, and its df.

        Two parts. Repeats (tests whose cost depends on background threads) vary within one pair
        of servers: their own variance, averaged like independent tests; never another test's noise.
        And the two servers themselves may differ, since each carries its own state (in an A/A
        cost run the copy's post-write point queries were 0.3 % off the base in every test and every
        repeat): that offset is shared by all tests of a run, so it does not shrink over tests or
        repeats. The recipe's repeatability bound (±tolerance as a 95 % bound) stands for it once."""
        z = float(_special.ndtri(0.5 + CONFIDENCE / 2))      # the normal quantile (norm.ppf's own function)
        terms = [((math.log(1 + self.tolerance) / z) ** 2, 1e9)]
        for key in keys:
            m = self.micros[key]
            ss, df = m.within()
            if df:
                terms.append((ss / df * m.mean_weight() / len(keys) ** 2, df))
        return sum(v for v, _ in terms), satterthwaite(terms)

    def summary(self, keys: list[str] | None = None) -> Estimate:
        """Geometric mean over microbenchmarks (all, or `keys`)."""
        keys = [k for k in (keys if keys is not None else list(self.micros)) if k in self.micros]
        if not keys:
            raise ValueError("no microbenchmark to summarise")
        if self.tolerance is not None:
            mean = float(np.mean([self.micros[k].mean() for k in keys]))
            variance, df = self.deterministic_variance(keys)
            return _t_estimate(mean, variance, df, sum(self.micros[k].n for k in keys), self.margin, self.tolerance)
        parts = [micro_variance(self.micros[k], self.component_of(k), self.within) for k in keys]
        mean = float(np.mean([self.micros[k].mean() for k in keys]))
        n = sum(self.micros[k].n for k in keys)
        if any(v is None for v, _ in parts):
            return _t_estimate(mean, None, None, n, self.margin)
        m = len(keys)
        # Var of the mean of independent estimates; Satterthwaite over the shared components. The
        # block noise is pooled over the summarised tests (the run's pool when they have no df of
        # their own), as a test's own estimate takes its own: a group of one test is that test (with
        # the run's pool a one-test group read "faster" where its test read "inconclusive").
        within = _pooled_within([self.micros[k] for k in keys])
        if not within[1]:
            within = self.within
        block = sum(within[0] * self.micros[k].mean_weight() for k in keys) / (m * m)
        terms = [(block, within[1])]
        if self.component.variance is not None:
            # The pool is one estimate shared by its tests; a test outside it brings its own.
            pooled = [k for k in keys if k not in self.own]
            terms.append((sum(self.component.variance / len(self.micros[k].by_instance) for k in pooled) / (m * m),
                          self.component.df))
            terms += [(self.own[k].variance / len(self.micros[k].by_instance) / (m * m), self.own[k].df)
                      for k in keys if k in self.own]
        variance = sum(v for v, _ in terms)
        return _t_estimate(mean, variance, satterthwaite(terms), n, self.margin)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values of one family (None: a hypothesis that could not be
    tested, left out of the family). The i-th smallest of m is multiplied by m − i + 1, and an
    adjusted p is never below one before it. Rejecting where the adjusted p is below α keeps the
    chance of any false claim in the family at α, whatever the dependence between the tests."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


def adjusted_verdicts(estimates: list[Estimate | None], adjust=holm) -> list[str | None]:
    """The verdicts of one family of estimates (a table's column) with the multiple comparisons
    controlled: 'faster'/'slower' when the adjusted p of 'the ratio is 1' is below 1 − CONFIDENCE,
    'same' when the adjusted TOST p is at most that, each claim kind a family of its own. With one
    estimate in the family, the same as Estimate.verdict()."""
    alpha = 1 - CONFIDENCE
    differ = adjust([e.p_value() if e else None for e in estimates])
    equal = adjust([e.equivalence_p() if e else None for e in estimates])
    out: list[str | None] = []
    for e, p, q in zip(estimates, differ, equal):
        if e is None:
            out.append(None)
        elif p is not None and p < alpha:
            out.append(e.words[0] if e.value > 1 else e.words[1])
        elif q is not None and q <= alpha:
            out.append("same")
        else:
            out.append("inconclusive")
    return out


@dataclass(frozen=True)
class Sensitivity:
    """Whether a summary's verdict survives the checks a reader would make: the excluded (outlier)
    blocks put back, and each test left out in turn."""
    verdict: str
    with_excluded: str | None                  # the verdict with the excluded blocks back (None: none)
    flips: tuple[tuple[str, str], ...] = ()    # (test, verdict without it), most influential first

    @property
    def robust(self) -> bool:
        return not self.flips and self.with_excluded in (None, self.verdict)


def sensitivity(full: Estimate, with_excluded: Estimate | None, without: dict[str, Estimate]) -> Sensitivity:
    """`without`: the summary with each test left out (the estimator run again without it). A flip
    is any change of verdict; the tests whose absence flips it come most influential first (the
    largest move of the log estimate)."""
    centre = math.log(full.value)
    flips = sorted(((k, e) for k, e in without.items() if e.verdict() != full.verdict()),
                   key=lambda ke: -abs(math.log(ke[1].value) - centre))
    return Sensitivity(full.verdict(), with_excluded.verdict() if with_excluded else None,
                       tuple((k, e.verdict()) for k, e in flips))


@dataclass(frozen=True)
class ReplicateSpread:
    """One variant's figure over its build replicates (each a binary of its own, each with its
    within-run estimate against one base binary)."""
    combined: Estimate        # over the replicates, its interval wide enough for build-to-build variation
    replicates: int
    between: float | None     # build-to-build standard deviation of the log ratio (τ); None: one build
    within: float             # root mean square of the replicates' own log standard errors


def combine_replicates(estimates: list[Estimate]) -> ReplicateSpread | None:
    """A random-effects combination of one variant's replicates: DerSimonian and Laird's τ² for the
    build-to-build variance (floored at 0), the weighted mean, and the modified Knapp-Hartung t interval
    with replicates − 1 df (its variance never below the random-effects one). The replicates share the
    base's servers, so their within-run errors do not average out: the variance is never below the
    smallest replicate's own either, and a cost estimate keeps its repeatability bound. None if a
    replicate has no interval. (statsmodels' combine_effects leaves a negative τ² in its weights, which
    gave intervals of NaN and centres outside every replicate: written out here.)"""
    if not estimates or any(e.log_se is None for e in estimates):
        return None
    first = estimates[0]
    logs = np.array([math.log(e.value) for e in estimates])
    v = np.array([max(float(e.log_se), 1e-12) ** 2 for e in estimates])
    within = rms_log_se(estimates)
    n = len(estimates)
    if n == 1:
        return ReplicateSpread(first, 1, None, within)
    w = 1 / v
    fixed = float((w * logs).sum() / w.sum())
    q = float((w * (logs - fixed) ** 2).sum())
    tau2 = max(0.0, (q - (n - 1)) / float(w.sum() - (w * w).sum() / w.sum()))
    w_re = 1 / (v + tau2)
    center = float((w_re * logs).sum() / w_re.sum())
    hartung = float((w_re * (logs - center) ** 2).sum() / ((n - 1) * w_re.sum()))
    variance = max(hartung, 1 / float(w_re.sum()), float(v.min()))
    df = n - 1
    se = math.sqrt(variance)
    half = _t_quantile(0.5 + CONFIDENCE / 2, df) * se
    count = sum(e.n for e in estimates)
    low, high = math.exp(center - half), math.exp(center + half)
    made = (Estimate(math.exp(center), low, high, count, None, se, first.margin, first.bound, df)
            if first.bound is not None else Estimate(math.exp(center), low, high, count, df, se, first.margin))
    return ReplicateSpread(made, n, math.sqrt(tau2), within)


def rms_log_se(estimates: list[Estimate]) -> float:
    """Root mean square of the estimates' own log standard errors (those that have one)."""
    known = [float(e.log_se) ** 2 for e in estimates if e.log_se is not None]
    return math.sqrt(sum(known) / len(known)) if known else math.nan


def pair_spread(estimates: list[Estimate]) -> float | None:
    """The build-to-build standard deviation shown by a build's replicates measured against the
    build itself: each log ratio is the difference of two builds (variance 2τ² beyond its own)."""
    usable = [e for e in estimates if e.log_se is not None]
    if not usable:
        return None
    excess = np.mean([math.log(e.value) ** 2 - e.log_se ** 2 for e in usable])
    return float(math.sqrt(max(excess, 0.0) / 2))


def _mad(values) -> float:
    a = np.asarray(values, float)
    return float(np.median(np.abs(a - np.median(a))))


def robust_scale(own: list[float], reference: list[float] | tuple[float, ...] = ()) -> float | None:
    """The MAD that outlier scores divide by: the microbenchmark's own residuals' once it has
    OUTLIER_MIN_BLOCKS of them, but never less than the run's (`reference`: the residuals of its
    other microbenchmarks, pooled with its own while those are fewer), nor than OUTLIER_MAD_FLOOR.
    A MAD of a handful of residuals is often far below the noise it estimates, and every paired
    ratio of every target is judged, so a block-level rule without that lower bound flags clean
    blocks by the dozen (tests/test_stats.py). None when there are too few residuals to judge."""
    own = list(own)
    run = list(reference) + (own if len(own) < OUTLIER_MIN_BLOCKS else [])
    mads = [_mad(r) for r in (own, run) if len(r) >= OUTLIER_MIN_BLOCKS]
    return max(mads + [OUTLIER_MAD_FLOOR]) if mads else None


def _instance_medians(observations: list[Observation]) -> dict[int, float]:
    return {i: float(np.median(v)) for i, v in MicroData.of(observations).by_instance.items()}


def instance_residuals(observations: list[Observation]) -> list[float]:
    """Each log ratio less the median of its instance: the block-to-block part of the noise. The
    median block of an odd instance is left out: its residual is 0 by construction, and with 3
    blocks a third of all residuals would be zeros that pull the MAD down."""
    residuals = []
    for values in MicroData.of(observations).by_instance.values():
        centre = float(np.median(values))
        nearest_first = sorted((v - centre for v in values), key=abs)
        residuals += nearest_first[1:] if len(values) % 2 else nearest_first
    return residuals


def outliers(observations: list[Observation], reference: list[float] | tuple[float, ...] = ()
             ) -> list[tuple[Observation, float]]:
    """Observations whose robust z-score, 0.6745·(y − its instance's median)/robust_scale,
    exceeds OUTLIER_Z, with their score. Judging each block against its own instance's median
    keeps an instance pair that is a few per cent apart for its whole life (real, and covered by
    the interval) from being taken for outliers. A first instance of 2-4 blocks, which could
    otherwise never be judged while its servers run, is judged against `reference` alone."""
    scale = robust_scale(instance_residuals(observations), reference)
    if scale is None:
        return []
    medians = _instance_medians(observations)
    scored = [(o, 0.6745 * (o.log_ratio - medians[o.instance]) / scale) for o in observations]
    return [(o, z) for o, z in scored if abs(z) > OUTLIER_Z]


def expected_false_verdicts(tests: int, confidence: float = CONFIDENCE) -> float:
    """How many 'faster'/'slower' verdicts chance alone gives among `tests` when nothing differs."""
    return tests * (1 - confidence)


def cv(values: list[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean)."""
    a = np.asarray(values, float)
    if len(a) < 2 or a.mean() == 0:
        return 0.0
    return float(a.std(ddof=1) / a.mean())


def geometric_mean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(values, float)))))


def group_summary(values: list[float]) -> dict[str, float]:
    """min, max, geometric mean and median: the shape of the published per-group tables."""
    a = np.asarray(values, float)
    return {"min": float(a.min()), "max": float(a.max()), "avg": geometric_mean(values),
            "median": float(np.median(a))}


def bridged_observations(values: dict[tuple[str, int, int, str], float], base: str, reference: str, label: str,
                         sign: int, excluded: set[tuple[str, int, int]] = frozenset(),
                         stride: int = 1) -> dict[str, list[Observation]]:
    """Per microbenchmark, `label` against `reference` through the base, for two targets that never ran
    in one block (the shards of a merged run, each with its own base): the label's log ratio against
    the base of its block, less the reference's against the base of the block at the same place in
    its own instances (instance modulo `stride`, block). The two are independent, so each observation
    carries both variances, and the estimator sees them. Only for two targets of one shard each
    (instance // stride): a target measured in several shards would pair one observation with several.
    A position one of them did not measure (an instance more) is left out."""
    ours = paired_observations(values, base, label, sign, excluded)
    theirs = paired_observations(values, base, reference, sign, excluded)
    shards = [{o.instance // stride for obs in side.values() for o in obs} for side in (ours, theirs)]
    if any(len(s) != 1 for s in shards):
        return {}
    out: dict[str, list[Observation]] = {}
    for micro in ours.keys() & theirs.keys():
        at = {(o.instance % stride, o.block): o.log_ratio for o in theirs[micro]}
        obs = [Observation(o.instance, o.block, o.log_ratio - at[(o.instance % stride, o.block)])
               for o in ours[micro] if (o.instance % stride, o.block) in at]
        if obs:
            out[micro] = obs
    return out


def bridged_tolerance(tolerance: float | None) -> float | None:
    """A repeatability bound for a ratio read through two bases: two pairs of servers may each be off
    by the bound, independently (the bound's variance twice)."""
    return None if tolerance is None else math.expm1(math.sqrt(2) * math.log1p(tolerance))


def paired_observations(values: dict[tuple[str, int, int, str], float], base: str, label: str,
                        sign: int, excluded: set[tuple[str, int, int]] = frozenset()) -> dict[str, list[Observation]]:
    """Per microbenchmark, the log ratios of `label` against `base` in the blocks where both ran.
    `values` maps (micro, instance, block, label) to a per-query figure; sign +1 gives
    log(label/base), -1 log(base/label). Excluded (outlier) blocks are left out."""
    out: dict[str, list[Observation]] = defaultdict(list)
    for (micro, instance, block, who), value in values.items():
        if who != label or (micro, instance, block) in excluded:
            continue
        base_value = values.get((micro, instance, block, base))
        if base_value and value and base_value > 0 and value > 0:
            out[micro].append(Observation(instance, block, sign * math.log(value / base_value)))
    return dict(out)
