"""The report's prose: how the figures were estimated, what the noise was, and how many verdicts
one table holds. Each measure says its own part of the noise and of the caveats."""

from __future__ import annotations

from .. import stats
from ..measurement import BenchOptions
from ..measures import Measure
from ..analysis import Analysis
from ..document import Table


def noise_note(a: Analysis, options: BenchOptions, measures: list[Measure]) -> str:
    parts = [line for m in measures for line in m.noise_lines(a, options)]
    return " ".join(parts) or "No repeated measurement: nothing can be said about noise."


def concurrency_note(options: BenchOptions, measures: list[Measure], cores: int | None) -> str | None:
    """Where a run's sysbench threads ran, per measure, when any test ran more than one."""
    if max(options.threads) == 1:
        return None
    return " ".join(filter(None, (m.concurrency_line(options, cores) for m in measures)))


def multiple_comparisons_note(micro: Table, options: BenchOptions, measures: list[Measure]) -> str:
    """Counts the verdicts of the per-microbenchmark table, each measure's apart, uncorrected and
    under Holm's correction."""
    parts, caveats = [], []
    for m in measures:
        verdicts = [r.get(f"{f.key}_verdict") for r in micro.rows for f in m.figures if r.get(f"{f.key}_verdict")]
        if verdicts:
            adjusted = [r.get(f"{f.key}_holm") for r in micro.rows for f in m.figures if r.get(f"{f.key}_verdict")]
            decided = sum(1 for v in verdicts if v in stats.CLAIMS)
            held = sum(1 for v in adjusted if v in stats.CLAIMS)
            better, worse = stats.COST_WORDS if m.tolerance(options) is not None else stats.SPEED_WORDS
            parts.append(f"{len(verdicts)} {m.title}-mode verdicts, {decided} of them '{better}' or '{worse}' (about "
                         f"{stats.expected_false_verdicts(len(verdicts)):.1f} by chance if no build differed), "
                         f"of which {held} hold under Holm's correction")
            caveats.append(m.comparisons_caveat(options))
    if not parts:
        return "No per-microbenchmark verdicts."
    return " ".join(["At 95% confidence the per-microbenchmark table holds " + "; ".join(parts) + ". Read single "
                     "rows with that in mind, and the per-build and per-group rows first. The 'verdict (Holm)' "
                     "columns keep the chance of any false claim among one figure's verdicts of a table at 5% "
                     "(Holm's step-down correction); the plain verdicts are each row's on its own.",
                     *filter(None, caveats)])


METHOD_NOTE = (
    "Per microbenchmark: the geometric mean of paired ratios (each block runs every target back to back). "
    "Its 95% interval combines block-to-block variation (its own) and instance-to-instance variation "
    "(pooled over the suite), with Satterthwaite degrees of freedom. Per build and per group: the geometric "
    "mean over microbenchmarks, with the pooled variation and its degrees of freedom. Verdicts: 'faster' or "
    "'slower' when the 95% interval excludes 1.0; 'same' when the 90% interval lies within ±2% (two one-sided "
    "tests); 'inconclusive' otherwise ('cheaper' or 'costlier' for a figure of the cost model, which is not a "
    "speed). Outliers (robust z-score of a paired log ratio, against its instance's median, over a MAD never "
    "below the run's, above 6) are excluded, listed, and measured again. Multiple comparisons: beside the "
    "per-microbenchmark and per-group verdicts, the verdict under Holm's step-down correction over one figure's "
    "verdicts of the table (p-values from the same estimate, standard error and degrees of freedom as the "
    "interval; 'same' claims, from the two one-sided tests, a family of their own). Sensitivity: each "
    "suite-level verdict (per build, group, axis or series pair) is read again with the excluded blocks put "
    "back and with each of its tests left out in turn; 'fragile' when any of these flips it.")
