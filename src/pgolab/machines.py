"""One binary measured on several machines (`pgolab machines`): its cost per query, test by test, from
each run that measured it (runs stored here, or files written by `pgolab export`), side by side; and,
when every run measured it against one base binary too, that comparison on each machine with the
machine-to-machine component (the spread of the ratio between machines, beside each run's own error).

Cost mode simulates one fixed machine, so a binary's figures should not depend on the host valgrind ran
on; this shows how far they do. The runs must be one experiment but for their targets, hosts and suites
(the same options and cache geometry; the tests they share are compared), and the label one binary in every run
(binaries.same_binary: one sha256, or one sha256 of what it runs): two builds that differ in code
are a build question, not a machine's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from . import merge, stats
from .bench import BINDING_KEYS
from .document import Column, Report, Table
from .errors import PgolabError
from .host import Host
from .measurement import figures
from .measures import host_records
from .binaries import digest_listing, same_binary
from .store import StoredTarget

COST = "cost"
# What may differ between the runs of one experiment on two machines: their binding (the targets and
# the base they were compared with, neither of which changes one binary's own figures, and the host),
# and what the cost method records of the host (its host_record: the processor glibc sees under valgrind).
# Two suites are compared on the tests they share (quick is a part of full); how the wall clock was
# measured, and whether it was, changes no cost figure.
SUITE_KEYS = ("suite", "micros", "options.suite", "options.modes", *(f"options.{k}" for k in (
    "slice_seconds", "instances", "blocks", "max_instances", "target_ci", "pair_budget_s", "warmup_seconds", "pin")))


def _target(shard: merge.Shard, label: str) -> StoredTarget:
    found = shard.target(label)
    if found is None:
        labels = ", ".join(sorted(t["label"] for t in shard.rows["targets"]))
        raise PgolabError(f"{shard.name} has no target {label!r}", hint=f"its targets: {labels}")
    return found


def _named(shards: list[merge.Shard], label: str) -> list[tuple[str, StoredTarget]]:
    return [(s.name, _target(s, label)) for s in shards]


def host_differences(shards: list[merge.Shard]) -> list[str]:
    """What the runs' identities differ in beyond targets, base, host and suite: the cost method's
    record of the host is expected; anything else is another experiment and is refused."""
    found = merge.check_same_experiment(
        shards, ignored=BINDING_KEYS, tolerated=lambda key: key in host_records() or key in SUITE_KEYS,
        hint="compare runs of the same suite and options (cost scale too)")
    return [d for d in found if d not in SUITE_KEYS]


def compare(shards: list[merge.Shard], label: str, bound: float = merge.CROSS_MACHINE_BOUND) -> Report:
    same = same_binary([t for _, t in _named(shards, label)])
    if same is None:
        raise PgolabError(f"{label} is not one binary in these runs ({digest_listing(_named(shards, label))})",
                          hint="rebuild it identically (same source, variant and toolchain) on each machine; a "
                               "clang LTO build of a tree at another path is one binary by the digest of what it "
                               "runs, which build.json records since pgolab's record version 9")
    differing = host_differences(shards)
    keys = tuple(f.key for f in figures(COST))
    per_run = {s.name: merge.cost_per_query(s, label, keys) for s in shards}
    hosts = [Host.from_dict(json.loads(s.rows["run"]["host"])) for s in shards]
    names = [f"run {i + 1}" for i in range(len(shards))]
    columns = [Column("test", "test"), Column("figure", "per query")]
    columns += [Column(n, f"{n}: {h.cpu} ({h.cpu_id})") for n, h in zip(names, hosts)]
    columns += [Column("spread", "max/min - 1 %"), Column("within", f"within ±{bound:.1%}")]
    rows = []
    common = sorted(set.intersection(*(set(f) for f in per_run.values())))
    for micro, key in common:
        values = [per_run[s.name][(micro, key)] for s in shards]
        spread = max(values) / min(values) - 1 if min(values) > 0 else math.inf
        row = {"test": micro, "figure": key, "spread": 100 * spread,
               "within": "yes" if math.log1p(spread) <= bound else "no"}
        row |= dict(zip(names, values))
        rows.append(row)
    cycles = [r for r in rows if r["figure"] == "cycles"]
    held = sum(r["within"] == "yes" for r in cycles)
    facts = [f"{label}: {same.describe()} in every run"]
    facts += [f"{n}: run {s.rows['run']['name']} ({s.rows['run']['created'][:10]}) on {h.describe()}"
              for n, s, h in zip(names, shards, hosts)]
    facts.append(f"estimated cycles within the bound in {held} of {len(cycles)} tests")
    note = (f"Each figure is the run's mean per query for this binary. 'within': the runs differ by at most the "
            f"cross-machine bound pgolab's merge allows for an anchor ({bound:.1%}).")
    notes = [("Identities", "the runs' identities differ only in their targets and hosts"
              + (f", and in {', '.join(differing)} (the cost method's record of the host, or a key one run "
                 f"did not record yet)" if differing else ""))]
    tables = [Table("machines", "One binary, per test, on each machine", columns, rows, note=note)]
    against, why_not = ratio_base(shards, label)
    if against:
        tables.append(ratios_table(shards, label, against))
    else:
        notes.append(("Against a base", why_not))
    return Report(f"pgolab machines: {label}", facts, tables, notes)


def ratio_base(shards: list[merge.Shard], label: str) -> tuple[str | None, str]:
    """The base every run compared `label` with, if it is one binary in all of them; else why not."""
    bases = {s.rows["run"]["base"] for s in shards}
    if len(bases) > 1:
        return None, f"the runs have different bases ({', '.join(sorted(bases))}): no ratio is compared"
    base = bases.pop()
    if base == label:
        return None, f"{label} is the runs' base: no ratio is compared"
    named = _named(shards, base)
    if same_binary([t for _, t in named]) is None:
        return None, (f"the base {base} is not one binary in every run ({digest_listing(named)}): "
                      f"its ratios are not compared across machines")
    return base, ""


@dataclass(frozen=True)
class MachineSuite:
    """One run's estimates of a label against the base for one figure, and where they were measured."""
    run: str
    host: Host
    figure_name: str        # the ratio's name, "(model)" for the cost model's
    model: bool             # a cost-model figure: it should not move between machines at all
    suite: stats.SuiteEstimates


def machine_suites(shards: list[merge.Shard], label: str, base: str) -> dict[str, list[MachineSuite]]:
    """Per figure key, each run's estimates of `label` against `base` (each run analysed alone, as its
    own report does, in a store of its own that is thrown away)."""
    from .report import analyses_apart
    from .report.tables import figure_name
    found: dict[str, list[MachineSuite]] = {}
    with analyses_apart([shard.rows for shard in shards], base) as analysed:
        for run, a in analysed:
            for f in a.headline():
                if (f.key, label) in a.suites:
                    found.setdefault(f.key, []).append(MachineSuite(
                        run.name, a.host, figure_name(a, f, on_cpu=False), a.is_model(f), a.suites[(f.key, label)]))
    return found


def ratios_table(shards: list[merge.Shard], label: str, base: str) -> Table:
    """`label` against `base`, both one binary everywhere, on each machine over the tests every run
    measured for that figure, and over the machines: a random-effects combination whose between-machine
    SD (τ) is the machine-to-machine component. A cost-model figure gets no verdict there: its
    interval on one or two degrees of freedom would read as "inconclusive" for a figure that should
    not move at all; its SD says whether it did."""
    from .report.tables import summary_over
    columns = [Column("figure", "figure"), Column("machine", "machine"), Column("ratio", "ratio [95% CI]"),
               Column("verdict", "verdict"), Column("within", "within-run SE %"),
               Column("between", "machine-to-machine SD %")]
    rows = []
    for per_run in machine_suites(shards, label, base).values():
        shared = sorted(set.intersection(*(set(m.suite.micros) for m in per_run)))
        if len(per_run) < len(shards) or not shared:
            continue
        estimates = [summary_over(m.suite, shared) for m in per_run]
        for m, e in zip(per_run, estimates):
            rows.append({"figure": m.figure_name, "machine": f"{m.host.cpu} ({m.host.cpu_id}): {m.run}", "ratio": e,
                         "verdict": e.verdict(), "within": 100 * e.log_se if e.log_se is not None else None,
                         "between": None})
        combined = stats.combine_replicates(estimates)
        if combined is None:
            continue
        model = per_run[0].model
        rows.append({"figure": per_run[0].figure_name, "machine": f"over the {len(per_run)} machines",
                     "ratio": combined.combined,
                     "verdict": "(model: read its SD)" if model else combined.combined.verdict(),
                     "within": 100 * combined.within,
                     "between": 100 * combined.between if combined.between is not None else None})
    return Table("ratios", f"{label} against {base}, the same two binaries on each machine", columns, rows,
                 note="Each machine's row is its run's suite figure on the tests every run measured for that figure. "
                      "'Over the machines' combines them with random effects (DerSimonian-Laird between-machine "
                      "variance, modified Knapp-Hartung t interval on machines - 1 degrees of freedom, never narrower "
                      "than the most precise machine's own, as for build replicates): its SD is the machine-to-machine "
                      "component of the ratio, 0 when the machines' figures differ by no more than their own errors "
                      "say they should. A wall-clock ratio is a claim about the CPU it was measured on; the cost "
                      "model's should not move between machines at all: its combined row has no verdict, read its SD.")
