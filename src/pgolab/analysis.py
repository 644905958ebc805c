"""The analysis of a stored run: estimates of every (figure, build) pair, and of the pairs a
version series and the axis twins add, from the same paired blocks. The report's tables and each
measure's own report parts read it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import labels as target_labels, stats
from .measurement import FIGURES, Figure
from .store import Store
from .suite import GROUPS
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

    def present(self) -> list[Figure]:
        return [f for f in FIGURES if any((f.key, l) in self.suites for l in self.labels)]

    def headline(self) -> list[Figure]:
        return [f for f in self.present() if f.headline]

    def groups(self) -> list[str]:
        seen = set(self.group_of.values())
        return [g for g in GROUPS if g in seen] + sorted(seen - set(GROUPS))

    def micros_of(self, group: str) -> list[str]:
        return [m for m in self.micros if self.group_of[m] == group]


def series_pairs(labels: list[str]) -> list[tuple[str, str]]:
    """In a version series (labels `<server>-<version>:<variant>`, trees in the order given), each
    later tree's build against the first tree's build of the same variant."""
    by_variant: dict[str, list[str]] = defaultdict(list)
    for label in labels:
        tree, own = target_labels.split(label)
        if tree:
            by_variant[own].append(label)
    return [(same[0], later) for same in by_variant.values() for later in same[1:]]


def analyse(store: Store, run_id: int, base: str, labels: list[str],
            tolerances: dict[str, float | None]) -> Analysis:
    """tolerances: per measure key, the repeatability bound its estimator adds (Measure.tolerance); a
    measure named there is analysed if the run holds its samples."""
    samples = store.samples(run_id)
    excluded = store.excluded(run_id)
    micros = list(dict.fromkeys(s.step.micro for s in samples))
    group_of = {s.step.micro: s.group for s in samples}
    variants = [l for l in labels if l != base]
    suites, pairs = {}, {}
    series = series_pairs(labels)
    axes = axis_pairs(labels)
    references = dict.fromkeys(series + [(p.without, p.with_) for p in axes])   # ordered, and a set
    base_by_instance = defaultdict(lambda: defaultdict(list))
    absolute: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    measured = {s.step.mode for s in samples}
    for mode, tolerance in tolerances.items():
        if mode not in measured:
            continue
        skip = {(k, i, b) for (m, k, i, b) in excluded if m == mode}
        for figure in (f for f in FIGURES if f.mode == mode):
            values = store.values(run_id, mode, figure.key)
            for (micro, inst, block, label), v in values.items():
                if v is None or (micro, inst, block) in skip:
                    continue
                absolute[(figure.key, micro, label)].append(v)
                if label == base:
                    base_by_instance[figure.key][(micro, inst)].append(v)
            for reference, label in dict.fromkeys([(base, l) for l in variants] + list(references)):
                obs = stats.paired_observations(values, reference, label, figure.ratio_sign(), skip)
                if obs:
                    estimates = stats.SuiteEstimates.of(obs, tolerance=tolerance)
                    if reference == base:
                        suites[(figure.key, label)] = estimates
                    if (reference, label) in references:
                        pairs[(figure.key, reference, label)] = estimates
    return Analysis(base, variants, micros, group_of, suites, base_by_instance,
                    {k: float(np.mean(v)) for k, v in absolute.items()}, excluded, pairs, series, axes)

