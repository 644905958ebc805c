"""The report of a stored run as one typed model; render.py writes it out.

Every table is defined here once (its columns and rows); the terminal, Markdown, HTML,
CSV and JSON renderers only format what they are given. Ratios read the same way
everywhere: > 1 means the variant is better (faster, or fewer CPU seconds,
instructions or misses per query).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import labels as target_labels, stats
from .cost import CACHE_GEOMETRY, CYCLE_FORMULA
from .errors import PgolabError
from .measurement import FIGURES, MODES, Figure, figures
from .record import BuildRecord
from .store import Store
from .suite import GROUPS
from .variants import AxisPair, axis_pairs

# A cost figure measured once carries its server recipe's repeatability bound, stored with the run
# (bench options); a run stored without one gets MariaDB's.
DEFAULT_COST_TOLERANCE = 0.005


@dataclass(frozen=True)
class Column:
    key: str
    title: str


@dataclass
class Table:
    key: str
    title: str
    columns: list[Column]
    rows: list[dict]          # column key -> str | int | float | stats.Estimate | None
    note: str = ""


@dataclass
class Chart:
    """One group's estimates of one figure, per microbenchmark and build."""
    key: str
    title: str
    figure: str
    micros: list[str]
    series: dict[str, list[stats.Estimate | None]]


@dataclass
class Report:
    title: str
    facts: list[str]
    tables: list[Table]
    notes: list[tuple[str, str]]
    charts: list[Chart] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def table(self, key: str) -> Table:
        return next(t for t in self.tables if t.key == key)


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
            cost_tolerance: float = DEFAULT_COST_TOLERANCE) -> Analysis:
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
    for mode in ("qps", "cost"):
        if not any(s.step.mode == mode for s in samples):
            continue
        skip = {(k, i, b) for (m, k, i, b) in excluded if m == mode}
        for figure in figures(mode):
            values = store.values(run_id, mode, figure.key)
            for (micro, inst, block, label), v in values.items():
                if v is None or (micro, inst, block) in skip:
                    continue
                absolute[(figure.key, micro, label)].append(v)
                if label == base:
                    base_by_instance[figure.key][(micro, inst)].append(v)
            tolerance = cost_tolerance if mode == "cost" else None
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


# -- tables ---------------------------------------------------------------------

def builds_table(a: Analysis) -> Table:
    """Per build, over the whole suite: the geometric mean of every headline ratio."""
    figs = [f for f in a.present() if f.headline]
    columns = [Column("build", "build")]
    for f in figs:
        columns += [Column(f.key, f"{f.ratio_name} [95% CI]"), Column(f"{f.key}_verdict", "verdict")]
        if f.key in ("qps", "cycles"):
            columns.append(Column(f"{f.key}_median", f"median {f.ratio_name}"))
    rows = []
    for label in a.labels:
        row = {"build": label}
        for f in figs:
            suite = a.suites.get((f.key, label))
            e = suite.summary() if suite else None
            row[f.key], row[f"{f.key}_verdict"] = e, e.verdict() if e else None
            if f.key in ("qps", "cycles"):
                row[f"{f.key}_median"] = (float(np.median([suite.micro(k).value for k in suite.micros]))
                                          if suite else None)
        rows.append(row)
    return Table("builds", "Per build (geometric mean over the suite)", columns, rows,
                 note="A ratio above 1 means the build is better than the base (more queries per second; fewer CPU "
                      "seconds, estimated cycles, instructions or I1 misses per query).")


def groups_table(a: Analysis) -> Table:
    columns = [Column("group", "group"), Column("build", "build"), Column("figure", "figure"),
               Column("min", "min"), Column("max", "max"), Column("geomean", "geomean [95% CI]"),
               Column("median", "median"), Column("verdict", "verdict")]
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
                rows.append({"group": group, "build": label, "figure": f.ratio_name, "min": shape["min"],
                             "max": shape["max"], "geomean": e, "median": shape["median"], "verdict": e.verdict()})
    return Table("groups", "Per group", columns, rows,
                 note="min, max and median of the group's per-microbenchmark ratios; the geometric mean "
                      "with its interval.")


def modes_table(a: Analysis) -> Table | None:
    """Per group and build, the wall-clock and the cost figures side by side (geometric means), so
    that what callgrind counts can be read against what the clock saw. Only for runs with both."""
    figs = [f for f in a.present() if f.headline]
    if len({f.mode for f in figs}) < 2:
        return None
    columns = [Column("group", "group"), Column("build", "build")] + [Column(f.key, f.ratio_name) for f in figs]
    rows = []
    for group in a.groups():
        for label in a.labels:
            row = {"group": group, "build": label}
            for f in figs:
                suite = a.suites.get((f.key, label))
                present = [k for k in a.micros_of(group) if suite and k in suite.micros]
                row[f.key] = suite.summary(present) if present else None
            rows.append(row)
    return Table("modes", "Per group: wall clock and cost side by side", columns, rows,
                 note="Geometric means over the group's microbenchmarks with 95% intervals; the per-group table "
                      "gives each one's min, max, median and verdict.")


def ratio_columns(figs: list[Figure]) -> list[Column]:
    return [c for f in figs
            for c in (Column(f.key, f"{f.ratio_name} [95% CI]"), Column(f"{f.key}_verdict", "verdict"))]


def pair_cells(a: Analysis, figs: list[Figure], reference: str, label: str) -> dict:
    """Each figure's suite ratio of `label` against `reference` (a pair the analysis holds), and its verdict."""
    cells = {}
    for f in figs:
        suite = a.pairs.get((f.key, reference, label))
        e = suite.summary() if suite else None
        cells[f.key], cells[f"{f.key}_verdict"] = e, e.verdict() if e else None
    return cells


def series_table(a: Analysis) -> Table | None:
    """A version series: is a later tree slower at equal optimization? Each later tree's build
    against the first tree's build of the same variant, per headline figure, from the same paired
    blocks as every other ratio. The per-build table says how far optimization takes each tree
    from the base."""
    pairs = sorted(a.series, key=lambda p: a.labels.index(p[1]))
    if not pairs:
        return None
    figs = [f for f in a.present() if f.headline]
    columns = [Column("variant", "variant"), Column("tree", "tree"), Column("against", "against")] + ratio_columns(figs)
    rows = []
    for ref, label in pairs:
        tree, own = target_labels.split(label)
        rows.append({"variant": own, "tree": tree, "against": target_labels.split(ref)[0],
                     **pair_cells(a, figs, ref, label)})
    return Table("series", "Version series: each tree against the first, at equal optimization", columns, rows,
                 note="Geometric mean over the suite; above 1 the later tree is better at the same variant. How "
                      "much of a gap optimization closes: the per-build table, which reads every build of every "
                      f"tree against the base, {a.base}.")


def axes_table(a: Analysis) -> Table | None:
    """What each axis of the variant grammar buys: every build against its twin without that axis
    alone (rel_lto against rel, rel_pgo_use_bolt against rel_pgo_use, ...), from the same paired
    blocks as every other ratio."""
    if not a.axes:
        return None
    figs = [f for f in a.present() if f.headline]
    columns = [Column("axis", "axis"), Column("build", "build"), Column("against", "against")] + ratio_columns(figs)
    rows = [{"axis": p.axis, "build": p.with_, "against": p.without, **pair_cells(a, figs, p.without, p.with_)}
            for p in a.axes]
    return Table("axes", "Per axis: each build against its twin without that axis", columns, rows,
                 note="Geometric mean over the suite; above 1 the axis helps. The summary gives each axis's "
                      "spread over its pairs.")


def axis_summary_table(a: Analysis) -> Table | None:
    """Per axis and headline figure: over its pairs, the geometric mean of their suite ratios, the
    least and the greatest. A description of the pairs, not an estimate with an interval: they share
    builds and blocks."""
    if not a.axes:
        return None
    figs = [f for f in a.present() if f.headline]
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
            rows.append({"axis": axis, "figure": f.ratio_name, "pairs": len(values), "geomean": shape["avg"],
                         "min": shape["min"], "max": shape["max"],
                         "least": min(values, key=values.get), "greatest": max(values, key=values.get)})
    return Table("axis_summary", "Per axis, over its pairs", columns, rows,
                 note="The pairs share builds and blocks: read min and max as the spread of what the axis "
                      "did, and each pair's interval in the per-axis table.")


def micro_table(a: Analysis) -> Table:
    figs = [f for f in a.present() if f.headline]
    columns = [Column("group", "group"), Column("micro", "microbenchmark"), Column("build", "build"),
               *ratio_columns(figs), Column("pairs", "pairs")]
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
    return Table("micro", "Per microbenchmark", columns, rows)


def cost_table(a: Analysis) -> Table | None:
    figs = [f for f in FIGURES if f.mode == "cost"]
    if not any(k[0] == "instructions" for k in a.absolute):
        return None
    columns = [Column("group", "group"), Column("micro", "microbenchmark"), Column("target", "target")]
    columns += [Column(f.key, f.unit) for f in figs]
    rows = []
    for micro in a.micros:
        for label in [a.base, *a.labels]:
            if ("instructions", micro, label) not in a.absolute:
                continue
            row = {"group": a.group_of[micro], "micro": micro.split("/", 1)[1], "target": label}
            row |= {f.key: round(a.absolute.get((f.key, micro, label), float("nan")), 1) for f in figs}
            rows.append(row)
    return Table("cost", "Cost per query (callgrind)", columns, rows, note=CYCLE_FORMULA)


def excluded_table(a: Analysis) -> Table:
    rows = [{"mode": m, "micro": k, "instance": i, "block": b, "reason": r}
            for (m, k, i, b), r in sorted(a.excluded.items())]
    return Table("excluded", "Outliers: excluded and re-measured blocks",
                 [Column("mode", "mode"), Column("micro", "microbenchmark"), Column("instance", "instance"),
                  Column("block", "block"), Column("reason", "why")], rows,
                 note="none" if not rows else "each was measured again on the same servers")


def targets_table(store: Store, run_id: int, methods: dict[str, str]) -> Table:
    rows = []
    for t in store.targets(run_id):
        desc = json.loads(t["description"])
        text = desc.get("description") or desc.get("version") or ""
        if desc.get("training"):
            text += f"; trained with {desc['training']}"
        if desc.get("profile_check"):
            text += f"; profile overlap with {desc['profile_check']['benchmark']}: " \
                    f"{desc['profile_check']['overlap'] * 100:.1f}%"
        rows.append({"label": t["label"], "kind": t["kind"], "binary": t["server_binary"],
                     "sha256": (t["binary_digest"] or "")[:12], "description": text,
                     "cost_method": methods.get(t["label"], "")})
    return Table("targets", "Targets", [Column("label", "label"), Column("kind", "kind"),
                                        Column("binary", "server binary"), Column("sha256", "sha256"),
                                        Column("description", "what"), Column("cost_method", "cost counted by")],
                 rows)


def bolt_summary(bolt: dict | None) -> str:
    """BOLT's own statistics of a build record's `bolt` phases, in one cell ('' without BOLT)."""
    s = (bolt or {}).get("bolt-optimize", {}).get("stats")
    if not s:
        return ""
    return (f"{s['reordered']} functions re-laid out, {s['profiled']} profiled of {s['functions']}, "
            f"{s['matched_share']:.0%} matched")


def builds_list_table(records: list[BuildRecord], title: str) -> Table:
    """Finished builds (`pgolab builds`): what each is, what it cost, its profile's use and its answer."""
    rows = []
    for r in records:
        check = r.profile.get("check-profile")
        rows.append({"build": r.label, "source": f"{r.server} {r.source['version']}", "what": r.description,
                     "wall_min": f"{r.build_seconds / 60:.1f}", "cpu_min": f"{r.build_cpu_seconds / 60:.1f}",
                     "code_mib": f"{r.code_bytes / 2**20:.1f}" if r.code_bytes else "-",
                     "training": r.training or "-",
                     "profile_used": f"{check['with_profile']}/{check['objects']} objects" if check else "-",
                     "bolt": bolt_summary(r.bolt) or "-", "smoke": (r.smoke or "-")[:40],
                     "binary": r.server_binary})
    return Table("build_list", title,
                 [Column("build", "build"), Column("source", "source"), Column("what", "what"),
                  Column("wall_min", "wall min"), Column("cpu_min", "CPU min"), Column("code_mib", "code MiB"),
                  Column("training", "training"), Column("profile_used", "profile used"), Column("bolt", "BOLT"),
                  Column("smoke", "smoke answer"), Column("binary", "server binary")], rows)


def build_cost_table(store: Store, run_id: int, base: str) -> Table | None:
    """What each build cost to make and how large its code is (targets pgolab built)."""
    records = {t["label"]: json.loads(t["description"]) for t in store.targets(run_id)}
    built = {label: r for label, r in records.items() if "build_seconds" in r}
    if not built:
        return None
    base_code = records.get(base, {}).get("code_bytes")
    rows = []
    for label, r in built.items():
        code = r.get("code_bytes")
        rows.append({"build": label, "wall_min": r["build_seconds"] / 60,
                     "cpu_min": (r.get("build_cpu_seconds") or 0) / 60,
                     "code_mib": code / 2**20 if code else None,
                     "code_vs_base": code / base_code if code and base_code else None,
                     "bolt": bolt_summary(r.get("bolt"))})
    return Table("build_cost", "Build cost and code size",
                 [Column("build", "build"), Column("wall_min", "wall min"), Column("cpu_min", "CPU min"),
                  Column("code_mib", "code MiB"), Column("code_vs_base", "code vs base"), Column("bolt", "BOLT")],
                 rows, note="Wall and CPU minutes of every phase (a PGO build includes its share of the "
                            "instrumented build and its training); code is the executable sections of the server. "
                            "A BOLTed binary keeps its original code in .bolt.org.text (functions BOLT did not move "
                            "still run from there; moved ones leave dead copies), so its code size is larger.")


# -- statements -------------------------------------------------------------------

def noise_note(a: Analysis, options: dict) -> str:
    parts = []
    within = [stats.cv(v) for v in a.base_by_instance.get("qps", {}).values() if len(v) > 1]
    if within:
        parts.append(f"QPS: the base's coefficient of variation between slices of one server instance is "
                     f"{np.median(within) * 100:.1f}% (median over microbenchmark instances; max "
                     f"{max(within) * 100:.1f}%).")
        comps = [s.component for (f, _), s in a.suites.items() if f == "qps" and s.component.variance is not None]
        if comps:
            sd = np.median([np.sqrt(c.variance) for c in comps]) * 100
            parts.append(f"Instance to instance, a build's paired log ratio moves with a standard deviation of "
                         f"{sd:.1f}% (pooled over the suite, {comps[0].df:.0f} df); the intervals include it.")
        else:
            parts.append("Each microbenchmark ran on one server instance only: instance-to-instance variation "
                         "(a few per cent on this kind of machine) is not in the intervals.")
    for label in a.labels:
        suite = a.suites.get(("qps", label))
        halves = [suite.micro(k).half_width for k in suite.micros] if suite else []
        halves = [h for h in halves if h is not None]
        if halves:
            parts.append(f"{label}: per-microbenchmark 95% half-width of rQPS median {np.median(halves) * 100:.1f}%, "
                         f"max {max(halves) * 100:.1f}%; over the suite ±{suite.summary().half_width * 100:.1f}%.")
        if suite and suite.own:
            parts.append(f"{label}: the instances of {', '.join(sorted(suite.own))} differed far more than the "
                         f"other tests' (F test, {stats.STANDS_OUT_FAMILY_P:.0%} over the suite), so those carry their own instance variance "
                         f"with few degrees of freedom: wide intervals, not a wider pool for every test.")
    cpu = [stats.cv(v) for v in a.base_by_instance.get("cpu_us", {}).values() if len(v) > 1]
    if cpu:
        parts.append(f"The base's server CPU per query varies with a CV of {np.median(cpu) * 100:.1f}% (median).")
    # Cost mode has one instance per test: its repeats are the base's samples of that instance.
    cost = [stats.cv(v) for v in a.base_by_instance.get("instructions", {}).values() if len(v) > 1]
    if cost:
        parts.append(f"Cost: repeated measurements of the base's instructions per query vary with a CV of "
                     f"{np.median(cost) * 100:.2f}% (median; max {max(cost) * 100:.2f}%).")
    if "qps" in options.get("modes", []):
        parts.insert(0, f"{options.get('instances')} server instance(s) per microbenchmark, "
                        f"{options.get('blocks')} paired blocks of {options.get('slice_seconds')} s each, "
                        f"order alternating within and between instances"
                        + (f", more instances (up to {options.get('max_instances')}) until the 95% half-width is "
                           f"{options['target_ci'] * 100:.1f}% or {options.get('pair_budget_s')} s per pair are "
                           f"spent" if options.get("target_ci") else "") + ".")
    return " ".join(parts) or "No repeated measurement: nothing can be said about noise."


def multiple_comparisons_note(tables: list[Table], cost_tolerance: float) -> str:
    """Counts the verdicts of the per-microbenchmark table, each mode's apart."""
    micro = next(t for t in tables if t.key == "micro")
    parts = []
    for mode in MODES:
        columns = [f"{f.key}_verdict" for f in figures(mode)]
        verdicts = [r.get(c) for r in micro.rows for c in columns if r.get(c)]
        if verdicts:
            decided = sum(1 for v in verdicts if v in ("faster", "slower"))
            parts.append(f"{len(verdicts)} {mode.upper() if mode == 'qps' else mode}-mode verdicts, {decided} of "
                         f"them 'faster' or 'slower' (about {stats.expected_false_verdicts(len(verdicts)):.1f} by "
                         f"chance if no build differed)")
    if not parts:
        return "No per-microbenchmark verdicts."
    return ("At 95% confidence the per-microbenchmark table holds " + "; ".join(parts) + ". Read single rows with "
            "that in mind, and the per-build and per-group rows first. Cost intervals rest on a "
            f"±{cost_tolerance * 100:.1f}% repeatability bound plus the repeats' own variance: on tests that write, "
            "or read what writes left, two servers' states can differ by more than that bound.")


METHOD_NOTE = (
    "Per microbenchmark: the geometric mean of paired ratios (each block runs every target back to back). "
    "Its 95% interval combines block-to-block variation (its own) and instance-to-instance variation "
    "(pooled over the suite), with Satterthwaite degrees of freedom. Per build and per group: the geometric "
    "mean over microbenchmarks, with the pooled variation and its degrees of freedom. Verdicts: 'faster' or "
    "'slower' when the 95% interval excludes 1.0; 'same' when the 90% interval lies within ±2% (two one-sided "
    "tests); 'inconclusive' otherwise. Outliers (robust z-score of a paired log ratio, against its instance's "
    "median, over a MAD never below the run's, above 6) are excluded, listed, and measured again.")


CHART_FIGURES = ("qps", "cpu_us", "cycles")   # the rest are in the tables


def charts(a: Analysis) -> list[Chart]:
    out = []
    for f in a.present():
        if f.key not in CHART_FIGURES:
            continue
        for group in a.groups():
            keys = a.micros_of(group)
            series = {}
            for label in a.labels:
                suite = a.suites.get((f.key, label))
                series[label] = [suite.micro(k) if suite and k in suite.micros else None for k in keys]
            if any(e for s in series.values() for e in s):
                out.append(Chart(f"{f.ratio_name}-{group}", f"{group}: {f.ratio_name} vs {a.base}", f.ratio_name,
                                 [k.split("/", 1)[1] for k in keys], series))
    return out


def compute(store: Store, run_ref: str | int | None, base: str | None = None) -> Report:
    """The report of a stored run; `base` re-reads it against another of its targets (every target
    ran in every block, so any two pair as the run's base and a build do)."""
    run = store.run(run_ref)
    if run is None:
        raise PgolabError(f"no stored run {run_ref!r}" if run_ref else "the store holds no run yet",
                          hint=f"`pgolab report --list` shows stored runs (store: {store.path})")
    labels = [t["label"] for t in store.targets(run["id"])]
    base = base or run["base"]
    if base not in labels:
        raise PgolabError(f"run {run['name']!r} has no target {base!r}",
                          hint=f"its targets: {', '.join(labels)}")
    options = json.loads(run["options"])
    tolerance = options.get("cost_tolerance") or DEFAULT_COST_TOLERANCE
    a = analyse(store, run["id"], base, labels, tolerance)
    methods = {}
    for s in store.samples(run["id"], "cost"):
        methods.setdefault(s.step.label, s.detail.get("method", ""))
    tables = [builds_table(a)]
    series = series_table(a)
    if series:
        tables.append(series)
    tables.append(groups_table(a))
    tables += [t for t in (axis_summary_table(a), axes_table(a)) if t]
    side_by_side = modes_table(a)
    if side_by_side:
        tables.append(side_by_side)
    tables.append(micro_table(a))
    cost = cost_table(a)
    if cost:
        tables.append(cost)
    build_cost = build_cost_table(store, run["id"], base)
    if build_cost:
        tables.append(build_cost)
    tables += [excluded_table(a), targets_table(store, run["id"], methods)]
    host = json.loads(run["host"])
    modes = options.get("modes") or ["qps"]
    based = base if base == run["base"] else f"{base} (the run's own base: {run['base']})"
    facts = [f"server {run['server']}; base {based}; suite {run['suite']}; measured {', '.join(modes)}; "
             f"{store.sample_count(run['id'])} samples; status {run['status']}",
             f"host: {host.get('cpu')} ({host.get('cpu_id', 'family not recorded')}; caches "
             f"{host.get('caches', 'not recorded')}), {host.get('cores')} cores, {host.get('memory_gib')} GiB, "
             f"kernel {host.get('kernel')}"]
    notes = [("Method", METHOD_NOTE), ("Noise", noise_note(a, options)),
             ("Multiple comparisons", multiple_comparisons_note(tables, tolerance))]
    if cost:
        notes.append(("Cost mode", f"Server under valgrind callgrind with cache and branch simulation "
                                   f"({' '.join(CACHE_GEOMETRY)}), a fixed number of events per microbenchmark "
                                   f"after a warm-up of a quarter as many; {CYCLE_FORMULA}. rCost is base/variant "
                                   f"of estimated cycles per query."))
    return Report(f"pgolab run {run['name']}", facts, tables, notes, charts(a), json.loads(run["commands"]))
