"""The analysis of a stored run: estimates of every (figure, build) pair, and of the pairs a
version series and the axis twins add, from the same paired blocks; how sensitive each summary's
verdict is (the excluded blocks put back, each test left out); the machine the run measured on.
The report's tables and each measure's own report parts read it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import labels as target_labels, stats
from .host import Host
from .measurement import FIGURES, BenchOptions, Figure
from .store import INSTANCE_STRIDE, Store
from .suite import GROUPS, threads_of
from .variants import AxisPair, axis_pairs


@dataclass
class Analysis:
    """Estimates of every (figure, build) pair of a run, and what they were computed from."""
    base: str
    labels: list[str]                       # the variants, in target order
    micros: list[str]                       # suite keys in run order
    group_of: dict[str, str]
    suites: dict[tuple[str, str], stats.SuiteEstimates]   # (figure key, label)
    base_by_instance: dict[str, dict[tuple[str, int], list[float]]]
    absolute: dict[tuple[str, str, str], float]             # (figure, micro, label) -> mean per query
    excluded: dict[tuple[str, str, int, int], str]
    # (figure key, reference, label): a label against another target than the base (the version
    # series' trees, the axis twins)
    pairs: dict[tuple[str, str, str], stats.SuiteEstimates] = field(default_factory=dict)
    series: list[tuple[str, str]] = field(default_factory=list)
    axes: list[AxisPair] = field(default_factory=list)
    host: Host | None = None                # the machine the run measured on
    # per measure key, the repeatability bound its estimates carry (None: estimated from the repeats);
    # a measure with a bound counts on a simulated machine: a cost model, not a speed of this host
    bounds: dict[str, float | None] = field(default_factory=dict)
    # per figure key, the stored per-query values (micro, instance, block, label) -> value, excluded
    # blocks included: what the sensitivity checks re-estimate from
    values: dict[str, dict[tuple[str, int, int, str], float]] = field(default_factory=dict, repr=False)
    options: BenchOptions | None = None     # what the run was asked to measure (threads, tables, pinning)
    # (mode, reference, label): pairs that never ran in one block of that measure (two shards of a
    # merged run), read through each one's own base (stats.bridged_observations)
    bridged: set[tuple[str, str, str]] = field(default_factory=set)
    _cache: dict = field(default_factory=dict, repr=False)

    def estimates(self, figure: Figure, reference: str, label: str) -> stats.SuiteEstimates | None:
        """The estimates of `label` against `reference` (the base, or a pair the analysis holds)."""
        if reference == self.base:
            return self.suites.get((figure.key, label))
        return self.pairs.get((figure.key, reference, label))

    def is_model(self, figure: Figure) -> bool:
        """A figure of the cost model (its measure's intervals rest on a repeatability bound)."""
        return self.bounds.get(figure.mode) is not None

    def cpu(self) -> str:
        """The CPU model the run's wall-clock figures were measured on, e.g. "AMD EPYC (family 26,
        model 2)": the name alone covers generations that price the same code differently."""
        return "an unrecorded CPU" if self.host is None else self.host.model()

    def sensitivity(self, figure: Figure, reference: str, label: str,
                    keys: list[str] | None = None) -> stats.Sensitivity | None:
        """Does the summary's verdict over `keys` (default: the suite) survive the run's excluded
        blocks put back, and each of those tests left out (the estimator run again without it)?"""
        suite = self.estimates(figure, reference, label)
        if suite is None:
            return None
        keys = [k for k in (keys if keys is not None else list(suite.micros)) if k in suite.micros]
        if not keys:
            return None
        full = suite.summary(keys)
        kept = self._with_excluded(figure, reference, label)
        with_excluded = kept.summary([k for k in keys if k in kept.micros]) if kept is not None else None
        without = {}
        if len(keys) > 1:
            for k in keys:
                rest = self._without(figure, reference, label, k)
                without[k] = rest.summary([j for j in keys if j != k])
        return stats.sensitivity(full, with_excluded, without)

    def _without(self, figure: Figure, reference: str, label: str, key: str) -> stats.SuiteEstimates:
        cached = (figure.key, reference, label, key)
        if cached not in self._cache:
            self._cache[cached] = self.estimates(figure, reference, label).without(key)
        return self._cache[cached]

    def _with_excluded(self, figure: Figure, reference: str, label: str) -> stats.SuiteEstimates | None:
        """The estimates with the mode's excluded blocks put back; None when it excluded none."""
        if not any(m == figure.mode for (m, *_) in self.excluded):
            return None
        cached = (figure.key, reference, label, "with excluded")
        if cached not in self._cache:
            obs, tolerance = pair_observations(self.values.get(figure.key, {}), self.base, reference, label,
                                               figure.ratio_sign(), self.bounds.get(figure.mode), frozenset(),
                                               (figure.mode, reference, label) in self.bridged)
            self._cache[cached] = stats.SuiteEstimates.of(obs, tolerance=tolerance)
        return self._cache[cached]

    def present(self) -> list[Figure]:
        return [f for f in FIGURES if any((f.key, l) in self.suites for l in self.labels)]

    def headline(self) -> list[Figure]:
        return [f for f in self.present() if f.headline]

    def groups(self) -> list[str]:
        seen = set(self.group_of.values())
        return [g for g in GROUPS if g in seen] + sorted(seen - set(GROUPS))

    def micros_of(self, group: str) -> list[str]:
        return [m for m in self.micros if self.group_of[m] == group]

    def thread_counts(self) -> list[int]:
        """A thread sweep's counts, ascending (empty for a run of one count)."""
        return sorted({t for t in map(threads_of, self.micros) if t is not None})

    def micros_at(self, threads: int, keys: list[str] | None = None) -> list[str]:
        """The tests of a sweep (or of `keys`) run at one thread count."""
        return [m for m in (keys if keys is not None else self.micros) if threads_of(m) == threads]


def series_pairs(labels: list[str]) -> list[tuple[str, str]]:
    """In a version series (labels `<server>-<version>:<variant>`, trees in the order given), each
    later tree's build against the first tree's build of the same variant."""
    by_variant: dict[str, list[str]] = defaultdict(list)
    for label in labels:
        tree, own = target_labels.split(label)
        if tree:
            by_variant[own].append(label)
    return [(same[0], later) for same in by_variant.values() for later in same[1:]]


def pair_observations(values: dict, base: str, reference: str, label: str, sign: int, tolerance: float | None,
                      skip: set, bridged: bool) -> tuple[dict[str, list[stats.Observation]], float | None]:
    """The observations of `label` against `reference` and the bound their estimator adds: from their
    common blocks, or, `bridged`, through each one's own base with the bound twice."""
    if bridged:
        return (stats.bridged_observations(values, base, reference, label, sign, skip, INSTANCE_STRIDE),
                stats.bridged_tolerance(tolerance))
    return stats.paired_observations(values, reference, label, sign, skip), tolerance


def analyse(store: Store, run_id: int, base: str, labels: list[str],
            tolerances: dict[str, float | None], host: Host | None = None,
            samples: list | None = None, options: BenchOptions | None = None, merged: bool = False) -> Analysis:
    """tolerances: per measure key, the repeatability bound its estimator adds (Measure.tolerance); a
    measure named there is analysed if the run holds its samples. samples: the run's, if the caller
    has them already. merged: a run of shards, where a pair of builds from two shards shares no block
    and is read through each one's base."""
    samples = samples if samples is not None else store.samples(run_id)
    excluded = store.excluded(run_id)
    micros = list(dict.fromkeys(s.step.micro for s in samples))
    group_of = {s.step.micro: s.group for s in samples}
    variants = [l for l in labels if l != base]
    suites, pairs = {}, {}
    bridged: set[tuple[str, str, str]] = set()
    series = series_pairs(labels)
    axes = axis_pairs(labels)
    references = dict.fromkeys(series + [(p.without, p.with_) for p in axes])   # ordered, and a set
    base_by_instance = defaultdict(lambda: defaultdict(list))
    absolute: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    measured = {s.step.mode for s in samples}
    stored: dict[str, dict[tuple[str, int, int, str], float]] = {}
    for mode, tolerance in tolerances.items():
        if mode not in measured:
            continue
        skip = {(k, i, b) for (m, k, i, b) in excluded if m == mode}
        for figure in (f for f in FIGURES if f.mode == mode):
            values = store.values(run_id, mode, figure.key)
            stored[figure.key] = values
            for (micro, inst, block, label), v in values.items():
                if v is None or (micro, inst, block) in skip:
                    continue
                absolute[(figure.key, micro, label)].append(v)
                if label == base:
                    base_by_instance[figure.key][(micro, inst)].append(v)
            for reference, label in dict.fromkeys([(base, l) for l in variants] + list(references)):
                obs, bound = pair_observations(values, base, reference, label, figure.ratio_sign(), tolerance,
                                               skip, False)
                if not obs and merged and reference != base:
                    obs, bound = pair_observations(values, base, reference, label, figure.ratio_sign(), tolerance,
                                                   skip, True)
                    if obs:
                        bridged.add((mode, reference, label))
                if obs:
                    estimates = stats.SuiteEstimates.of(obs, tolerance=bound)
                    if reference == base:
                        suites[(figure.key, label)] = estimates
                    if (reference, label) in references:
                        pairs[(figure.key, reference, label)] = estimates
    return Analysis(base, variants, micros, group_of, suites, base_by_instance,
                    {k: float(np.mean(v)) for k, v in absolute.items()}, excluded, pairs, series, axes, host,
                    {mode: tolerances[mode] for mode in tolerances if mode in measured}, stored, options, bridged)

