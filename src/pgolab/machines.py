"""One binary measured on several machines (`pgolab machines`): its cost per query, test by test, from
each run that measured it (runs stored here, or files written by `pgolab export`), side by side.

Cost mode simulates one fixed machine, so a binary's figures should not depend on the host valgrind ran
on; this shows how far they do. The runs must be one experiment but for their targets, hosts and suites
(the same options and cache geometry; the tests they share are compared), and the label one binary (one sha256) in every run: two
builds that differ are a build question, not a machine's.
"""

from __future__ import annotations

import json
import math

from . import merge
from .document import Column, Report, Table
from .errors import PgolabError
from .host import Host
from .measurement import figures

COST = "cost"
# What may differ between the runs of one experiment on two machines: the targets and the base they
# were compared with (neither changes one binary's own figures), the host, and what the cost method
# records of the host (the processor glibc sees under valgrind).
HOST_KEYS = ("targets", "base", "host")
# Two suites are compared on the tests they share (quick is a part of full); how the wall clock was
# measured, and whether it was, changes no cost figure.
SUITE_KEYS = ("suite", "micros", "options.suite", "options.modes", *(f"options.{k}" for k in (
    "slice_seconds", "instances", "blocks", "max_instances", "target_ci", "pair_budget_s", "warmup_seconds", "pin")))


def _digest(shard: merge.Shard, label: str) -> str:
    found = next((t["binary_digest"] for t in shard.rows["targets"] if t["label"] == label), None)
    if found is None:
        labels = ", ".join(sorted(t["label"] for t in shard.rows["targets"]))
        raise PgolabError(f"{shard.name} has no target {label!r}", hint=f"its targets: {labels}")
    return found


def host_differences(shards: list[merge.Shard]) -> list[str]:
    """What the runs' identities differ in beyond targets, base, host and suite: the cost method's
    record of the host is expected; anything else is another experiment and is refused."""
    found = merge.check_same_experiment(
        shards, ignored=HOST_KEYS, tolerated=lambda key: key.startswith("cost_method") or key in SUITE_KEYS,
        hint="compare runs of the same suite and options (cost scale too)")
    return [d for d in found if d not in SUITE_KEYS]


def compare(shards: list[merge.Shard], label: str, bound: float = merge.CROSS_MACHINE_BOUND) -> Report:
    digests = {s.name: _digest(s, label) for s in shards}
    if len(set(digests.values())) > 1:
        listed = ", ".join(f"{name}: {d[:12]}" for name, d in digests.items())
        raise PgolabError(f"{label} is not one binary in these runs ({listed})",
                          hint="rebuild it identically (same source, variant and toolchain) on each machine")
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
    facts = [f"{label}: sha256 {next(iter(digests.values()))[:12]} in every run"]
    facts += [f"{n}: run {s.rows['run']['name']} ({s.rows['run']['created'][:10]}) on {h.describe()}"
              for n, s, h in zip(names, shards, hosts)]
    facts.append(f"estimated cycles within the bound in {held} of {len(cycles)} tests")
    note = (f"Each figure is the run's mean per query for this binary. 'within': the runs differ by at most the "
            f"cross-machine bound pgolab's merge allows for an anchor ({bound:.1%}).")
    notes = [("Identities", "the runs' identities differ only in their targets and hosts"
              + (f", and in {', '.join(differing)} (the cost method's record of the host, or a key one run "
                 f"did not record yet)" if differing else ""))]
    return Report(f"pgolab machines: {label}", facts, [Table("machines", "One binary, per test, on each machine",
                                                             columns, rows, note=note)], notes)
