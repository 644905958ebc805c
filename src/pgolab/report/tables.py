"""Every table of a run's report, defined once: its columns and rows, from the analysis (and, for
the targets and build cost, from the stored targets). A measure's own tables are the measure's.

Every ratio names what it is a claim about: a wall-clock figure the CPU model it was measured on,
a figure of the cost model "(model)" and its interval a bound. Tables of suite-level verdicts say
whether each survives its excluded blocks put back and each test left out; tables of many verdicts
add each one under Holm's correction over the table's column."""

from __future__ import annotations

import numpy as np

from .. import labels as target_labels, replicates, stats
from ..measurement import CLOCK_FIGURE, MODEL_FIGURE, Figure
from ..profiles.bolt import BoltStats
from ..record import BuildRecord
from ..store import MergedShards, StoredTarget
from ..analysis import Analysis
from ..document import Chart, Column, LineChart, Table


def figure_name(a: Analysis, f: Figure, on_cpu: bool = True) -> str:
    """A ratio's name with what it is a claim about: "rQPS on AMD EPYC (family 26, model 2)", or
    "rCost, estimated cycles (model)". on_cpu=False leaves the CPU out (a table that has it as a column)."""
    if a.is_model(f):
        return f"{f.ratio_name}, {f.unit.removesuffix('/query')} (model)"
    return f"{f.ratio_name} on {a.cpu()}" if on_cpu else f.ratio_name


def ratio_title(a: Analysis, f: Figure) -> str:
    """The column title of a ratio with its interval: a cost-model interval is called a bound."""
    if a.is_model(f):
        return f"{figure_name(a, f)} [95%: ±{a.bounds[f.mode] * 100:.1f}% bound + repeats]"
    return f"{figure_name(a, f)} [95% CI]"


def short_micro(key: str) -> str:
    return key.split("/", 1)[-1]


def sensitivity_text(s: stats.Sensitivity | None) -> str | None:
    """'robust', or what flips the verdict: 'fragile: with the excluded blocks, same; without
    update-inlist, inconclusive (and 2 more tests)'."""
    if s is None:
        return None
    if s.robust:
        return "robust"
    parts = []
    if s.with_excluded not in (None, s.verdict):
        parts.append(f"with the excluded blocks, {s.with_excluded}")
    if s.flips:
        test, verdict = s.flips[0]
        more = len(s.flips) - 1
        parts.append(f"without {short_micro(test)}, {verdict}"
                     + (f" (and {more} more test{'s' if more > 1 else ''})" if more else ""))
    return "fragile: " + "; ".join(parts)


def sensitivity_of_row(a: Analysis, figs: list[Figure], reference: str, label: str) -> str | None:
    """One cell for a row of several figures' suite verdicts: 'robust', or each fragile one's name
    and what flips it."""
    found = {f: a.sensitivity(f, reference, label) for f in figs}
    fragile = [f"{f.ratio_name} {sensitivity_text(s)}" for f, s in found.items() if s and not s.robust]
    if not any(found.values()):
        return None
    return "; ".join(fragile) if fragile else "robust"


SENSITIVITY_NOTE = ("Sensitivity: whether a verdict survives the run's excluded outlier blocks put back, and each of "
                    "its tests left out in turn (the estimator run again without it); 'fragile' names what flips it "
                    "(the most influential test first).")


def builds_table(a: Analysis) -> Table:
    """Per build, over the whole suite: the geometric mean of every headline ratio."""
    figs = a.headline()
    columns = [Column("build", "build")]
    for f in figs:
        columns += [Column(f.key, ratio_title(a, f)), Column(f"{f.key}_verdict", "verdict")]
        if f.median:
            columns.append(Column(f"{f.key}_median", f"median {figure_name(a, f)}"))
    columns.append(Column("sensitivity", "sensitivity"))
    rows = []
    for label in a.labels:
        row = {"build": label}
        for f in figs:
            suite = a.suites.get((f.key, label))
            e = suite.summary() if suite else None
            row[f.key], row[f"{f.key}_verdict"] = e, e.verdict() if e else None
            if f.median:
                row[f"{f.key}_median"] = (float(np.median([suite.micro(k).value for k in suite.micros]))
                                          if suite else None)
        row["sensitivity"] = sensitivity_of_row(a, figs, a.base, label)
        rows.append(row)
    models = [f for f in figs if a.is_model(f)]
    claims = ("A ratio above 1 means the build is better than the base (more queries per second; fewer CPU "
              "seconds, estimated cycles, instructions or I1 misses per query).")
    if any(not a.is_model(f) for f in figs):
        claims += f" Wall-clock ratios hold for the machine they were measured on, {a.cpu()}."
    if models:
        claims += (" Cost figures are callgrind's model of a fixed machine: a build is 'cheaper' or 'costlier' in "
                   "that model, which is not a claim about speed; their intervals rest on the recipe's "
                   "repeatability bound (an assumption, not measured by this run) and the repeats' variance.")
    return Table("builds", "Per build (geometric mean over the suite)", columns, rows,
                 note=f"{claims} Each row is one binary measured in this run: its interval leaves out how another "
                      f"build of the variant would differ (see the build replicates table where a run has them). "
                      f"{SENSITIVITY_NOTE}")


def replicates_table(a: Analysis) -> Table | None:
    """Per build with replicates in the run (labels V, V+r2, ...), each headline figure over its
    builds: every replicate's suite figure, the combination whose interval includes the build-to-build
    spread, and that spread beside the within-run one. The base's replicates are measured against
    the base itself: their ratios are one build against another, and give the base's spread. An axis
    whose pairs repeat over replicates (V_bolt+rK against V+rK) gets rows of its own: its effect over
    the build pairs."""
    by_build: dict[str, list[str]] = {}
    for label in [a.base, *a.labels]:
        by_build.setdefault(replicates.split(label)[0], []).append(label)
    replicated = {b: ls for b, ls in by_build.items() if len(ls) > 1}
    axes = replicated_axes(a)
    if not replicated and not axes:
        return None
    columns = [Column("build", "build"), Column("figure", "figure"), Column("replicates", "replicates"),
               Column("each", "each replicate against the base (an axis: against its twin)"),
               Column("combined", "over the builds [95% CI, build-to-build included]"),
               Column("verdict", "verdict"), Column("single", "replicate 1 alone [95% CI; one binary, or an axis's one pair]"),
               Column("within", "within-run SE %"), Column("between", "build-to-build SD %")]
    rows = []
    for build, members in replicated.items():
        for f in a.headline():
            found = {m: a.suites[(f.key, m)].summary() for m in members if (f.key, m) in a.suites}
            if not found:
                continue
            each = ", ".join(f"{replicates.split(m)[1]}: {e.value:.3f}" for m, e in found.items())
            row = {"build": build, "figure": figure_name(a, f), "replicates": len(found) + (build == a.base), "each": each}
            if build == a.base:
                spread = stats.pair_spread(list(found.values()))
                row |= {"combined": None, "verdict": "(the base)", "single": None,
                        "within": 100 * stats.rms_log_se(list(found.values())),
                        "between": 100 * spread if spread is not None else None}
            else:
                combined = stats.combine_replicates(list(found.values()))
                if combined is None:
                    continue
                row |= combined_cells(combined, found.get(build))
            rows.append(row)
    for (axis, with_, without), pairs in axes.items():
        for f in a.headline():
            found = {replicates.split(p.with_)[1]: a.pairs[(f.key, p.without, p.with_)].summary() for p in pairs
                     if (f.key, p.without, p.with_) in a.pairs}
            combined = stats.combine_replicates(list(found.values())) if len(found) > 1 else None
            if combined is None:
                continue
            rows.append({"build": f"{axis}: {with_} against {without}", "figure": figure_name(a, f),
                         "replicates": len(found), "each": ", ".join(f"{k}: {e.value:.3f}" for k, e in found.items()),
                         **combined_cells(combined, found.get(1))})
    return Table("replicates", "Build replicates: each figure over independent builds of one variant", columns, rows,
                 note="Every other table's row is one binary measured in one run. A replicate is another build of the "
                      "same variant (V+rK: another training seed for PGO, another code layout from the link: clang's "
                      "lld shuffles the .text input sections, gcc's builds permute each link's object files, which "
                      "moves their data and constructor order too). Replicate 1 is the build as the variant makes "
                      "it, the link order of its build system, not a shuffled one. 'Over the builds' combines a "
                      "variant's replicates with random effects (DerSimonian-Laird build-to-build variance, "
                      "modified Knapp-Hartung t interval on replicates - 1 degrees of freedom), its variance never "
                      "below the most precise replicate's own (a variant's replicates are read against the same base "
                      "servers, so their errors are not independent; an axis row's pairs share no server, and there "
                      "the floor only errs wide), so two or three builds give a wide interval. The base's "
                      "replicates are measured against the base: each of their ratios is one build against "
                      "another, and its spread is that of a single build (the root of half the pair variance "
                      "beyond the within-run part); the base's own spread is not in the other "
                      "rows' intervals. An axis row (AXIS: V_AXIS against V) combines the same way each replicate "
                      "of the build against the same replicate of its twin (V_AXIS+rK against V+rK): the axis's "
                      "effect over the builds, and how much it moves from one build pair to the next.")


def replicated_axes(a: Analysis) -> dict[tuple[str, str, str], list]:
    """The axis pairs of the run that repeat over build replicates, by (axis, build, twin): BOLT's
    V_bolt against V, V_bolt+r2 against V+r2, ..."""
    found: dict[tuple[str, str, str], list] = {}
    for p in a.axes:
        found.setdefault((p.axis, replicates.split(p.with_)[0], replicates.split(p.without)[0]), []).append(p)
    return {k: ps for k, ps in found.items() if len(ps) > 1}


def combined_cells(combined: stats.ReplicateSpread, single: stats.Estimate | None) -> dict:
    """The replicates table's cells of a combination over builds: the interval with build-to-build
    variation, its verdict, replicate 1 alone and both spreads (in %)."""
    return {"combined": combined.combined, "verdict": combined.combined.verdict(), "single": single,
            "within": 100 * combined.within,
            "between": 100 * combined.between if combined.between is not None else None}


def with_holm(rows: list[dict], estimate: str, out: str, family) -> None:
    """Adds each row's verdict under Holm's correction (column `out`) to rows holding an Estimate in
    `estimate`; a family is the rows of equal family(row) (one figure of one table)."""
    families: dict = {}
    for r in rows:
        families.setdefault(family(r), []).append(r)
    for members in families.values():
        for r, v in zip(members, stats.adjusted_verdicts([r.get(estimate) for r in members])):
            r[out] = v


def groups_table(a: Analysis) -> Table:
    columns = [Column("group", "group"), Column("build", "build"), Column("figure", "figure"),
               Column("min", "min"), Column("max", "max"), Column("geomean", "geomean [95% CI or bound]"),
               Column("median", "median"), Column("verdict", "verdict"), Column("holm", "verdict (Holm)"),
               Column("sensitivity", "sensitivity")]
    rows = []
    for group in a.groups():
        keys = a.micros_of(group)
        for label in a.labels:
            for f in a.present():
                if not f.headline or (f.key, label) not in a.suites:
                    continue
                suite = a.suites[(f.key, label)]
                present = [k for k in keys if k in suite.micros]
                if not present:
                    continue
                shape = stats.group_summary([suite.micro(k).value for k in present])
                e = suite.summary(present)
                rows.append({"group": group, "build": label, "figure": figure_name(a, f), "min": shape["min"],
                             "max": shape["max"], "geomean": e, "median": shape["median"], "verdict": e.verdict(),
                             "sensitivity": sensitivity_text(a.sensitivity(f, a.base, label, present))})
    with_holm(rows, "geomean", "holm", lambda r: r["figure"])
    return Table("groups", "Per group", columns, rows,
                 note="min, max and median of the group's per-microbenchmark ratios; the geometric mean "
                      "with its interval. The Holm verdict controls the chance of any false claim among the "
                      f"table's verdicts of one figure at 5%. {SENSITIVITY_NOTE}")


def modes_table(a: Analysis) -> Table | None:
    """Per group and build, the wall-clock and the cost figures side by side (geometric means), so
    that what callgrind counts can be read against what the clock saw. Only for runs with both."""
    figs = a.headline()
    if len({f.mode for f in figs}) < 2:
        return None
    columns = [Column("group", "group"), Column("build", "build")] + [Column(f.key, figure_name(a, f)) for f in figs]
    rows = []
    for group in a.groups():
        for label in a.labels:
            row = {"group": group, "build": label}
            for f in figs:
                suite = a.suites.get((f.key, label))
                row[f.key] = summary_over(suite, a.micros_of(group))
            rows.append(row)
    return Table("modes", "Per group: wall clock and cost side by side", columns, rows,
                 note="Geometric means over the group's microbenchmarks with 95% intervals; the per-group table "
                      "gives each one's min, max, median and verdict.")


def ratio_columns(a: Analysis, figs: list[Figure], holm: bool = False) -> list[Column]:
    return [c for f in figs
            for c in (Column(f.key, ratio_title(a, f)), Column(f"{f.key}_verdict", "verdict"),
                      *([Column(f"{f.key}_holm", "verdict (Holm)")] if holm else []))]


def pair_cells(a: Analysis, figs: list[Figure], reference: str, label: str) -> dict:
    """Each figure's suite ratio of `label` against `reference` (a pair the analysis holds), its
    verdict, and how sensitive the row's verdicts are."""
    cells = {}
    for f in figs:
        suite = a.pairs.get((f.key, reference, label))
        e = suite.summary() if suite else None
        cells[f.key], cells[f"{f.key}_verdict"] = e, e.verdict() if e else None
    cells["sensitivity"] = sensitivity_of_row(a, figs, reference, label)
    return cells


def series_table(a: Analysis) -> Table | None:
    """A version series: is a later tree slower at equal optimization? Each later tree's build
    against the first tree's build of the same variant, per headline figure, from the same paired
    blocks as every other ratio. The per-build table says how far optimization takes each tree
    from the base."""
    pairs = sorted(a.series, key=lambda p: a.labels.index(p[1]))
    if not pairs:
        return None
    figs = a.headline()
    columns = ([Column("variant", "variant"), Column("tree", "tree"), Column("against", "against")]
               + ratio_columns(a, figs) + [Column("sensitivity", "sensitivity")])
    rows = []
    for ref, label in pairs:
        tree, own = target_labels.split(label)
        rows.append({"variant": own, "tree": tree, "against": target_labels.split(ref)[0],
                     **pair_cells(a, figs, ref, label)})
    return Table("series", "Version series: each tree against the first, at equal optimization", columns, rows,
                 note="Geometric mean over the suite; above 1 the later tree is better at the same variant. How "
                      "much of a gap optimization closes: the per-build table, which reads every build of every "
                      f"tree against the base, {a.base}.{bridged_note(a, pairs)} {SENSITIVITY_NOTE}")


def axes_table(a: Analysis) -> Table | None:
    """What each axis of the variant grammar buys: every build against its twin without that axis
    alone (rel_lto against rel, rel_pgo_use_bolt against rel_pgo_use, ...), from the same paired
    blocks as every other ratio."""
    if not a.axes:
        return None
    figs = a.headline()
    columns = ([Column("axis", "axis"), Column("build", "build"), Column("against", "against")]
               + ratio_columns(a, figs) + [Column("sensitivity", "sensitivity")])
    rows = [{"axis": p.axis, "build": p.with_, "against": p.without, **pair_cells(a, figs, p.without, p.with_)}
            for p in a.axes]
    return Table("axes", "Per axis: each build against its twin without that axis", columns, rows,
                 note="Geometric mean over the suite; above 1 the axis helps. The summary gives each axis's "
                      f"spread over its pairs.{bridged_note(a, [(p.without, p.with_) for p in a.axes])} "
                      f"{SENSITIVITY_NOTE}")


def bridged_note(a: Analysis, pairs: list[tuple[str, str]]) -> str:
    """What the table's rows measured in different shards rest on (empty when none was)."""
    across = [f"{label} against {reference}" for reference, label in pairs
              if any(key[1:] == (reference, label) for key in a.bridged)]
    if not across:
        return ""
    bounds = [f"the ±{b:.1%} bound of {mode} is ±{stats.bridged_tolerance(b):.1%} there"
              for mode, b in a.bounds.items() if b is not None and any(k[0] == mode for k in a.bridged)]
    return (f" Measured in different shards, so read through each shard's own base (no common block; each "
            f"test's ratio to its base, one less the other, the repeatability bound counted for both pairs of "
            f"servers{': ' + '; '.join(bounds) if bounds else ''}): {', '.join(across)}.")


def axis_summary_table(a: Analysis) -> Table | None:
    """Per axis and headline figure: over its pairs, the geometric mean of their suite ratios, the
    least and the greatest. A description of the pairs, not an estimate with an interval: they share
    builds and blocks."""
    if not a.axes:
        return None
    figs = a.headline()
    columns = [Column("axis", "axis"), Column("figure", "figure"), Column("pairs", "pairs"),
               Column("geomean", "geomean of the pairs"), Column("min", "min"), Column("max", "max"),
               Column("least", "least (build)"), Column("greatest", "greatest (build)")]
    rows = []
    for axis in dict.fromkeys(p.axis for p in a.axes):
        for f in figs:
            values = {p.with_: a.pairs[(f.key, p.without, p.with_)].summary().value for p in a.axes
                      if p.axis == axis and (f.key, p.without, p.with_) in a.pairs}
            if not values:
                continue
            shape = stats.group_summary(list(values.values()))
            rows.append({"axis": axis, "figure": figure_name(a, f), "pairs": len(values), "geomean": shape["avg"],
                         "min": shape["min"], "max": shape["max"],
                         "least": min(values, key=values.get), "greatest": max(values, key=values.get)})
    return Table("axis_summary", "Per axis, over its pairs", columns, rows,
                 note="The pairs share builds (and, within a shard, blocks): read min and max as the spread of "
                      "what the axis did, and each pair's interval in the per-axis table.")


def summary_over(suite: stats.SuiteEstimates | None, keys: list[str]) -> stats.Estimate | None:
    """A build's summary over those of `keys` it was measured on (a group's tests, a thread count's)."""
    present = [k for k in keys if suite and k in suite.micros]
    return suite.summary(present) if present else None


def swept_figure(a: Analysis) -> Figure | None:
    """What a thread sweep's chart draws: queries per second if the run measured them, else the cost
    model's cycles per query."""
    present = a.present()
    return next((f for f in (CLOCK_FIGURE, MODEL_FIGURE) if f in present), None)


def sweep_level(a: Analysis, f: Figure, label: str, keys: list[str]) -> float | None:
    """A target's level of one figure over `keys`: the geometric mean of its per-test means."""
    values = [a.absolute[(f.key, k, label)] for k in keys if (f.key, k, label) in a.absolute]
    return stats.geometric_mean(values) if values and len(values) == len(keys) else None


def threads_table(a: Analysis) -> Table | None:
    """A thread sweep: every build's ratios at each thread count (the suite's tests at that count),
    and the level the chart draws, the base's included."""
    counts = a.thread_counts()
    if not counts:
        return None
    figs = a.headline()
    level = swept_figure(a)
    columns = [Column("build", "build"), Column("threads", "threads"), *ratio_columns(a, figs)]
    if level:
        columns.append(Column("level", f"{level.unit} (geometric mean of the tests)"))
    rows = []
    for label in [a.base, *a.labels]:
        for t in counts:
            keys = a.micros_at(t)
            row = {"build": label, "threads": t}
            for f in figs:
                e = summary_over(a.suites.get((f.key, label)), keys)
                row[f.key], row[f"{f.key}_verdict"] = e, e.verdict() if e else None
            if level:
                row["level"] = sweep_level(a, level, label, keys)
            rows.append(row)
    return Table("threads", "Per build and thread count (geometric mean over the suite's tests at each count)",
                 columns, rows, note="The base's rows give its level only. How the threads were placed on this "
                                     "machine's CPUs is in the notes (Concurrency).")


def sweep_charts(a: Analysis) -> list[LineChart]:
    """A thread sweep: the level of each build against the thread count, one chart per group and one
    over the whole suite."""
    counts, f = a.thread_counts(), swept_figure(a)
    if not counts or f is None:
        return []
    out = []
    for group in [None, *a.groups()]:
        keys = a.micros if group is None else a.micros_of(group)
        series = {label: [sweep_level(a, f, label, a.micros_at(t, keys)) for t in counts]
                  for label in [a.base, *a.labels]}
        if any(v is not None for values in series.values() for v in values):
            name = group or "suite"
            title = f"{'every test' if group is None else group}: {f.unit} against threads"
            out.append(LineChart(f"threads-{f.ratio_name}-{name}", title, "sysbench threads",
                                 f.unit + ("" if a.is_model(f) else f" on {a.cpu()}"), counts, series))
    return out


def micro_table(a: Analysis) -> Table:
    figs = a.headline()
    columns = [Column("group", "group"), Column("micro", "microbenchmark"), Column("build", "build"),
               *ratio_columns(a, figs, holm=True), Column("pairs", "pairs")]
    rows = []
    for micro in a.micros:
        for label in a.labels:
            row = {"group": a.group_of[micro], "micro": micro.split("/", 1)[1], "build": label}
            pairs = 0
            for f in figs:
                suite = a.suites.get((f.key, label))
                e = suite.micro(micro) if suite and micro in suite.micros else None
                row[f.key], row[f"{f.key}_verdict"] = e, e.verdict() if e else None
                pairs = max(pairs, e.n if e else 0)
            row["pairs"] = pairs
            rows.append(row)
    for f in figs:
        with_holm(rows, f.key, f"{f.key}_holm", lambda r: True)
    return Table("micro", "Per microbenchmark", columns, rows,
                 note="verdict: each row on its own, at 95%; verdict (Holm): under Holm's correction over the "
                      "column (every microbenchmark and build of one figure), so that the chance of any false "
                      "claim among them is 5%.")


def model_agreement_table(a: Analysis) -> Table | None:
    """How far the cost model carries, per build (and per axis or series pair) and group, and over
    the suite: the correlation of the tests' log rCost with their log rQPS, and the ratio of the two
    log effects (the geometric means'). Only for runs with both figures."""
    pairs = ([(a.base, label) for label in a.labels] + [(p.without, p.with_) for p in a.axes]
             + sorted(a.series, key=lambda p: a.labels.index(p[1])))
    rows = []
    for reference, label in dict.fromkeys(pairs):
        model, clock = a.estimates(MODEL_FIGURE, reference, label), a.estimates(CLOCK_FIGURE, reference, label)
        if model is None or clock is None:
            continue
        for group in [*a.groups(), "all"]:
            keys = [k for k in (a.micros if group == "all" else a.micros_of(group))
                    if k in model.micros and k in clock.micros]
            if not keys:
                continue
            x = np.log([clock.micro(k).value for k in keys])
            y = np.log([model.micro(k).value for k in keys])
            r = float(np.corrcoef(x, y)[0, 1]) if len(keys) >= 3 and x.std() > 0 and y.std() > 0 else None
            qps, cost = clock.summary(keys), model.summary(keys)
            ratio = (float(np.mean(y) / np.mean(x)) if qps.verdict() in stats.CLAIMS and np.mean(x) else None)
            rows.append({"group": group, "build": label, "against": reference, "tests": len(keys),
                         "clock": qps, "model": cost, "r": r, "ratio": ratio})
    if not rows:
        return None
    return Table("model_agreement", "The cost model against the wall clock",
                 [Column("group", "group"), Column("build", "build"), Column("against", "against"),
                  Column("tests", "tests"), Column("clock", ratio_title(a, CLOCK_FIGURE)),
                  Column("model", ratio_title(a, MODEL_FIGURE)),
                  Column("r", f"r (per-test log {MODEL_FIGURE.ratio_name}, log {CLOCK_FIGURE.ratio_name})"),
                  Column("ratio", f"log {MODEL_FIGURE.ratio_name} / log {CLOCK_FIGURE.ratio_name}")], rows,
                 note=f"r: the correlation over the group's tests (3 or more) of their log {MODEL_FIGURE.ratio_name} "
                      f"and log {CLOCK_FIGURE.ratio_name}, lowered by the wall clock's per-test noise. The last "
                      f"column: how many times the model's effect (log of the geometric mean) the clock's is, shown "
                      f"where {CLOCK_FIGURE.ratio_name}'s interval excludes 1; 1 where the model predicts the clock, "
                      f"above 1 where it overstates it. The model's verdicts are about estimated cycles, not speed "
                      f"on {a.cpu()}.")


def excluded_table(a: Analysis) -> Table:
    rows = [{"mode": m, "micro": k, "instance": i, "block": b, "reason": r}
            for (m, k, i, b), r in sorted(a.excluded.items())]
    return Table("excluded", "Outliers: excluded and re-measured blocks",
                 [Column("mode", "mode"), Column("micro", "microbenchmark"), Column("instance", "instance"),
                  Column("block", "block"), Column("reason", "why")], rows,
                 note="none" if not rows else "each was measured again on the same servers")


def targets_table(targets: list[StoredTarget], methods: dict[str, dict[str, str]],
                  method_columns: list[Column]) -> Table:
    """methods: per method column key, each target's method (a measure's own, e.g. cost's counted function)."""
    rows = []
    for t in targets:
        rows.append({"label": t.label, "kind": t.kind, "binary": t.server_binary, "sha256": t.binary_digest[:12],
                     "description": t.description.summary(),
                     **{c.key: methods.get(c.key, {}).get(t.label, "") for c in method_columns}})
    return Table("targets", "Targets", [Column("label", "label"), Column("kind", "kind"),
                                        Column("binary", "server binary"), Column("sha256", "sha256"),
                                        Column("description", "what"), *method_columns], rows)


def bolt_summary(s: BoltStats | None) -> str:
    """BOLT's own statistics of a build, in one cell ('' without BOLT)."""
    if s is None:
        return ""
    return f"{s.reordered} functions re-laid out, {s.profiled} profiled of {s.functions}, {s.matched_share:.0%} matched"


def builds_list_table(records: list[BuildRecord], title: str) -> Table:
    """Finished builds (`pgolab builds`): what each is, what it cost, its profile's use and its answer."""
    rows = []
    for r in records:
        used = r.profile_use
        rows.append({"build": r.label, "source": f"{r.server} {r.version}", "what": r.description,
                     "wall_min": f"{r.build_seconds / 60:.1f}", "cpu_min": f"{r.build_cpu_seconds / 60:.1f}",
                     "code_mib": f"{r.code_bytes / 2**20:.1f}" if r.code_bytes else "-",
                     "training": r.training or "-",
                     "profile_used": f"{used.with_profile}/{used.objects} objects" if used else "-",
                     "bolt": bolt_summary(r.bolt_stats) or "-", "smoke": (r.smoke or "-")[:40],
                     "sha256": " / ".join(d[:12] if d else "-" for d in (r.binary_digest, r.code_digest)),
                     "binary": r.server_binary})
    return Table("build_list", title,
                 [Column("build", "build"), Column("source", "source"), Column("what", "what"),
                  Column("wall_min", "wall min"), Column("cpu_min", "CPU min"), Column("code_mib", "code MiB"),
                  Column("training", "training"), Column("profile_used", "profile used"), Column("bolt", "BOLT"),
                  Column("smoke", "smoke answer"), Column("sha256", "sha256 file / loaded"),
                  Column("binary", "server binary")], rows,
                 note="sha256 loaded: of what the binary runs (entry point, program headers, loaded sections), "
                      "without the symbol table, debug information and build ID (elf.loaded_digest); where two "
                      "builds share it and not the file's, only those differ.")


def build_cost_table(targets: list[StoredTarget], base: str) -> Table | None:
    """What each build cost to make and how large its code is (targets pgolab built)."""
    built = {t.label: t.description for t in targets if isinstance(t.description, BuildRecord)}
    if not built:
        return None
    base_code = built[base].code_bytes if base in built else None
    rows = []
    for label, r in built.items():
        code = r.code_bytes
        rows.append({"build": label, "wall_min": r.build_seconds / 60,
                     "cpu_min": (r.build_cpu_seconds or 0) / 60,
                     "code_mib": code / 2**20 if code else None,
                     "code_vs_base": code / base_code if code and base_code else None,
                     "bolt": bolt_summary(r.bolt_stats)})
    return Table("build_cost", "Build cost and code size",
                 [Column("build", "build"), Column("wall_min", "wall min"), Column("cpu_min", "CPU min"),
                  Column("code_mib", "code MiB"), Column("code_vs_base", "code vs base"), Column("bolt", "BOLT")],
                 rows, note="Wall and CPU minutes of every phase (a PGO build includes its share of the "
                            "instrumented build and its training); code is the executable sections of the server. "
                            "A BOLTed binary keeps its original code in .bolt.org.text (functions BOLT did not move "
                            "still run from there; moved ones leave dead copies), so its code size is larger.")


def shards_table(merged: MergedShards | None) -> Table | None:
    """A merged run's shards: where and when each ran, and what the builds it measured cost to make."""
    if merged is None:
        return None
    rows = [{"shard": s.name, "host": s.host or s.cpu, "started": s.started, "last_sample": s.last_sample,
             "builds": ", ".join(s.builds) or None, "wall_min": s.build_wall_min, "cpu_min": s.build_cpu_min}
            for s in merged.shards]
    return Table("shards", "Shards merged into this run",
                 [Column("shard", "shard (its run)"), Column("host", "host (or its CPU model alone)"),
                  Column("started", "run started"), Column("last_sample", "last sample"),
                  Column("builds", "builds measured"), Column("wall_min", "their build wall min"),
                  Column("cpu_min", "their build CPU min")], rows,
                 note="Each shard as it was measured: its machine, when its run started and took its last sample, "
                      "and the pgolab builds it measured with the wall and CPU minutes their build records give, "
                      "summed (its base's included: the merged run keeps the first shard's base alone). A build "
                      "that two shards on one machine both measured is counted in each. Empty cells: merged by "
                      "a pgolab that did not record them, or no pgolab build (binaries given by path).")


def charts(a: Analysis) -> list[Chart | LineChart]:
    out: list[Chart | LineChart] = sweep_charts(a)
    for f in a.present():
        if not f.chart:
            continue
        for group in a.groups():
            keys = a.micros_of(group)
            series = {}
            for label in a.labels:
                suite = a.suites.get((f.key, label))
                series[label] = [suite.micro(k) if suite and k in suite.micros else None for k in keys]
            if any(e for s in series.values() for e in s):
                out.append(Chart(f"{f.ratio_name}-{group}", f"{group}: {figure_name(a, f)} vs {a.base}", f.ratio_name,
                                 [k.split("/", 1)[1] for k in keys], series))
    return out
