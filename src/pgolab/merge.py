"""One run from the shards of a matrix (`pgolab merge`): each shard measured the base beside its own
builds, so every build is read against the base of its own shard.

A shard's samples keep their blocks; its instances are renumbered (shard k's instance i becomes
100·k + i) so that each build pairs with the base measurement of its own shard, never another's.
The merge refuses, with the reason, shards that are not one experiment:
- another suite, other options, another cost method (cache geometry, cycle formula, valgrind);
- an anchor that moved: the base is not one binary in every shard (binaries.same_binary: one file,
  or one code digest a build record vouches for) and its per-test cost differs by more than the
  cross-machine bound;
- a label measured in several shards that is not one binary by the same rule.
The merged run's commands note each base or label taken as one binary by its code digest, or as one
anchor by its cost.
Wall-clock figures travel only between shards measured on one CPU model; otherwise the merged run
keeps the cost figures alone and says why, and the shards of each CPU model are merged apart into a
run of their wall-clock figures (NAME@cpu-model), which the merge prints after it.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import runfile
from .errors import PgolabError
from .host import Host
from .measurement import MODEL_FIGURE
from .record import BuildRecord
from .measures import MEASURES
from .binaries import digest_listing, same_binary
from .store import INSTANCE_STRIDE, ShardFacts, Store, StoredTarget, identity_difference, labels_named, not_built

# How far one binary's read-only cost per query moved between machines (Debian's mariadbd on three:
# 0.02-1.4 % on instructions at equal cost scale): two bases with different digests are one anchor
# only if every test's estimated cycles agree within this.
CROSS_MACHINE_BOUND = 0.015


@dataclass(frozen=True)
class Shard:
    name: str           # its run's name, or the file it came from
    rows: dict          # store.rows() of its run

    def target(self, label: str) -> StoredTarget | None:
        return next((StoredTarget.of_row(t) for t in self.rows["targets"] if t["label"] == label), None)


def load(store: Store, refs: list[str], at_least: int = 2) -> list[Shard]:
    """Each ref is a run stored here or a file written by `pgolab export`."""
    shards = []
    for ref in refs:
        path = Path(ref)
        if path.is_file():
            shards.append(Shard(ref, runfile.read(path)))
            continue
        run = store.run(ref)
        if run is None:
            raise PgolabError(f"{ref!r} is neither a stored run nor a run file", hint="`pgolab report --list`")
        shards.append(Shard(ref, store.rows(run.id)))
    if len(shards) < at_least:
        raise PgolabError(f"merge takes {at_least} shards or more", hint="name each shard's run or run file")
    seen: dict[tuple[str, str], str] = {}
    for shard in shards:
        key = (shard.rows["run"]["name"], shard.rows["run"]["created"])
        if key in seen:
            raise PgolabError(f"{shard.name} is the run {seen[key]} is (run {key[0]} of {key[1]}): one run given twice",
                              hint="name each run or run file once")
        seen[key] = shard.name
    return shards


def _identity(shard: Shard) -> dict:
    return json.loads(shard.rows["run"]["identity"])


def check_same_experiment(shards: list[Shard], ignored: tuple[str, ...] = ("targets", "host"),
                          tolerated=lambda key: False,
                          hint: str = "merge shards of one matrix command (same suite, options and cost method)"
                          ) -> list[str]:
    """Refuses shards whose run identities differ beyond the `ignored` keys, except in the (dotted)
    keys `tolerated` accepts; returns those tolerated differences."""
    compared = {k: v for k, v in _identity(shards[0]).items() if k not in ignored}
    found: set[str] = set()
    for shard in shards[1:]:
        other = {k: v for k, v in _identity(shard).items() if k not in ignored}
        differing = identity_difference(compared, other)
        beyond = [d for d in differing if not tolerated(d)]
        if beyond:
            raise PgolabError(f"{shard.name} is another experiment than {shards[0].name}: "
                              f"{', '.join(beyond)} differ", hint=hint)
        found.update(differing)
    return sorted(found)


def measured_targets(shard: Shard, dropped: set[str] = frozenset()) -> list[dict]:
    """The shard's targets with a sample outside the `dropped` modes: a target a measure left out
    (cost mode and a -march=native build with AVX-512) was not measured there, and another shard
    may measure its own build of that label."""
    labels = {s["label"] for s in shard.rows["samples"] if s["mode"] not in dropped}
    return [t for t in shard.rows["targets"] if t["label"] in labels]


def check_labels(shards: list[Shard], base: str, dropped: set[str] = frozenset()) -> list[str]:
    """One binary per label (binaries.same_binary) among the shards that measured it outside the
    `dropped` modes (those that go into one merged run); returns how each label measured as two files
    is one."""
    measured: dict[str, list[tuple[str, StoredTarget]]] = defaultdict(list)
    for shard in shards:
        for row in measured_targets(shard, dropped):
            if row["label"] != base:
                measured[row["label"]].append((shard.name, StoredTarget.of_row(row)))
    notes = []
    for label, named in measured.items():
        if len(named) == 1:
            continue
        same = same_binary([t for _, t in named])
        if same is None:
            raise PgolabError(f"{label} was measured in {len(named)} shards and is not shown to be one binary "
                              f"({digest_listing(named)})",
                              hint="merge shards whose builds of one label are one binary: one file, or one code "
                                   "digest (recorded by builds since pgolab's record version 9)")
        if same.by_code:
            notes.append(f"{label}: {same.describe()}")
    return notes


def cost_per_query(shard: Shard, label: str, keys: tuple[str, ...] = (MODEL_FIGURE.key,)
                   ) -> dict[tuple[str, str], float]:
    """(test, figure) -> the mean per-query value of `label` in the shard's cost samples."""
    values = defaultdict(list)
    for s in shard.rows["samples"]:
        if s["label"] == label and s["mode"] == MODEL_FIGURE.mode:
            vals = json.loads(s["vals"])
            for key in keys:
                if vals.get(key):
                    values[(s["micro"], key)].append(vals[key])
    return {k: sum(v) / len(v) for k, v in values.items()}


def _base_cycles(shard: Shard, base: str) -> dict[str, float]:
    return {micro: v for (micro, _), v in cost_per_query(shard, base).items()}


def _base_drifts(shards: list[Shard], base: str) -> dict[str, dict[str, float]]:
    """Per later shard, per test both it and the first shard measured: how far the base's estimated
    cycles are from the first shard's (|log ratio|). Empty when the first shard measured no cost."""
    reference = _base_cycles(shards[0], base)
    if not reference:
        return {}
    return {shard.name: {m: abs(math.log(cycles[m] / reference[m])) for m in reference if m in cycles}
            for shard in shards[1:] for cycles in [_base_cycles(shard, base)]}


def check_anchor(shards: list[Shard], base: str, bound: float = CROSS_MACHINE_BOUND) -> list[str]:
    """The base of every shard is one binary (binaries.same_binary), or costs the same per test within
    the bound; returns how, where its files differ."""
    named = [(s.name, s.target(base)) for s in shards]
    missing = [name for name, t in named if t is None]
    if missing:
        raise PgolabError(f"{', '.join(missing)} did not measure the base {base}", hint="every shard measures the base")
    same = same_binary([t for _, t in named])
    if same is not None and not same.by_code:
        return []
    drifts = _base_drifts(shards, base)
    if same is not None:
        largest = max((d for per_test in drifts.values() for d in per_test.values()), default=None)
        return [f"the base {base}: {same.describe()}"
                + (f"; its per-test estimated cycles differ by up to {math.expm1(largest):.1%} between shards"
                   if largest is not None else "")]
    unmeasured = [s.name for s in shards[1:] if not drifts.get(s.name)]
    if unmeasured:
        raise PgolabError(f"the base {base} is not shown to be one binary ({digest_listing(named)}) and "
                          f"{', '.join(unmeasured)} measured its cost in no test {shards[0].name} did",
                          hint="rebuild the base from the same source and toolchain (reproducible builds), or "
                               "measure its cost on the same suite in every shard")
    for name, per_test in drifts.items():
        off = sorted(m for m, d in per_test.items() if d > bound)
        if off:
            raise PgolabError(f"the base {base} of {name} is another binary than {shards[0].name}'s and costs "
                              f"more than ±{bound:.1%} otherwise in {len(off)} tests: {', '.join(off[:8])}",
                              hint="rebuild the base identically in every shard (same source, toolchain, variant)")
    return [f"the base {base} is not shown to be one binary ({digest_listing(named)}) and costs the same within "
            f"±{bound:.1%} in every test the shards share: one anchor"]


def host_of(shard: Shard) -> Host:
    return Host.from_dict(json.loads(shard.rows["run"]["host"]))


def by_cpu_model(shards: list[Shard]) -> dict[str, list[Shard]]:
    """The shards by the CPU model they ran on (Host.model: the report's unit for wall-clock figures)."""
    groups: dict[str, list[Shard]] = {}
    for shard in shards:
        groups.setdefault(host_of(shard).model(), []).append(shard)
    return groups


def clock_modes() -> set[str]:
    """The measures whose figures hold for one machine: merged only within one CPU model."""
    return {m.key for m in MEASURES.values() if m.machine_bound}


def per_cpu_names(name: str, models: list[str]) -> dict[str, str]:
    """The runs of each CPU model's wall-clock figures: merged@amd-epyc-family-25-model-1; models
    whose names differ only in punctuation or case get -2, -3 in the order given."""
    names: dict[str, str] = {}
    for model in models:
        slug = candidate = f"{name}@{re.sub(r'[^a-z0-9]+', '-', model.lower()).strip('-')}"
        k = 2
        while candidate in names.values():
            candidate, k = f"{slug}-{k}", k + 1
        names[model] = candidate
    return names


@dataclass(frozen=True)
class Merged:
    run_id: int                                 # every shard's cost (and clock figures, if one CPU model)
    per_cpu: dict[str, int] = field(default_factory=dict)   # CPU model -> run of its shards' clock figures


def shard_facts(shard: Shard) -> ShardFacts:
    """Where and when a shard ran, and what the pgolab builds it measured cost to make, from its rows."""
    host = host_of(shard)
    records = [StoredTarget.of_row(t) for t in measured_targets(shard)]
    built = {t.label: t.description for t in records if isinstance(t.description, BuildRecord)}
    return ShardFacts(shard.rows["run"]["name"], host.model(), host.describe(), shard.rows["run"]["created"],
                      max((s["created"] for s in shard.rows["samples"]), default=None), tuple(built),
                      sum(r.build_seconds for r in built.values()) / 60 if built else None,
                      sum(r.build_cpu_seconds or 0 for r in built.values()) / 60 if built else None)


ANOTHER_MERGE = ("a merge of other shards is another run: name it otherwise (merge --name, matrix --cluster --run) "
                 "or use another --store")


def merged_rows(shards: list[Shard], name: str, command: str, dropped: set[str] = frozenset(),
                notes: list[str] = (), per_cpu: dict[str, str] | None = None) -> dict:
    """One run of the shards' rows, without the `dropped` modes' samples; `notes` say why, where the
    clock figures went instead (`per_cpu`: CPU model -> run name), and how a label built twice is one
    binary."""
    base = shards[0].rows["run"]["base"]
    run = dict(shards[0].rows["run"])
    notes = [command, f"merged from {', '.join(s.name for s in shards)}: shard k's instance i is instance "
                      f"{INSTANCE_STRIDE}·k + i; every build is read against its own shard's base", *notes]
    # A shard's note of what it did not build, unless the shards measured every label it names (a
    # -march=native build a shard on an AVX-512 CPU left out, measured by a fill run on a CPU without).
    measured = {s["label"] for shard in shards for s in shard.rows["samples"] if s["mode"] not in dropped}
    notes += [f"{line} (shard {s.name})" for s in shards for line in not_built(json.loads(s.rows["run"]["commands"]))
              if not labels_named(line) <= measured]
    # merged_from identifies the merge; the rest describes it (MergedShards.DESCRIBED): a run merged
    # before those keys existed is the same merge.
    identity = {"merged_from": [_identity(s) for s in shards],
                "shards": [asdict(shard_facts(s)) for s in shards],
                "clock_per_cpu": per_cpu or {}}
    options = json.loads(run["options"])
    options["modes"] = [m for m in options.get("modes", []) if m not in dropped]
    run.update(name=name, identity=json.dumps(identity), commands=json.dumps(notes), status="finished",
               options=json.dumps(options))
    # Each label's target from the first shard that measured it; a label no shard measured stays, from
    # its first shard, so the report still names it and says why.
    targets: dict[str, dict] = {}
    for t in [t for shard in shards for t in measured_targets(shard, dropped)] + \
             [t for shard in shards for t in shard.rows["targets"]]:
        targets.setdefault(t["label"], t)
    samples, excluded = [], []
    for k, shard in enumerate(shards, start=1):
        for s in shard.rows["samples"]:
            if s["mode"] not in dropped:
                samples.append({**s, "instance": INSTANCE_STRIDE * k + s["instance"]})
        for e in shard.rows["excluded"]:
            if e["mode"] not in dropped:
                excluded.append({**e, "instance": INSTANCE_STRIDE * k + e["instance"]})
    return {"run": run, "targets": sorted(targets.values(), key=lambda t: t["label"] != base),
            "samples": samples, "excluded": excluded}


def filling(filler: Shard, shards: list[Shard], base: str) -> Shard | None:
    """A filler's rows reduced to what the shards did not measure: per measure, its samples of the
    labels no shard has a sample of in that measure (a -march=native build a shard on an AVX-512 CPU
    left out of cost), with its base's samples of those measures to read them against. None if
    nothing is left."""
    have = {(s["mode"], s["label"]) for shard in shards for s in shard.rows["samples"]}
    kept = {(s["mode"], s["label"]) for s in filler.rows["samples"]
            if s["label"] != base and (s["mode"], s["label"]) not in have}
    if not kept:
        return None
    modes = {mode for mode, _ in kept}
    def keep(row: dict) -> bool:
        return row["mode"] in modes and (row["label"] == base or (row["mode"], row["label"]) in kept)
    labels = {base} | {label for _, label in kept}
    rows = {**filler.rows, "targets": [t for t in filler.rows["targets"] if t["label"] in labels],
            "samples": [s for s in filler.rows["samples"] if keep(s)],
            "excluded": [e for e in filler.rows["excluded"] if e["mode"] in modes]}
    return Shard(filler.name, rows)


def merge(store: Store, refs: list[str], name: str, command: str, at_least: int = 2,
          fill: list[str] = (), notes: list[str] = ()) -> Merged:
    """The shards' runs as one run named `name` in the store. Shards on several CPU models: that run
    holds their cost alone, and each model's shards are merged apart into a run of their clock figures.
    A `fill` run adds only what no shard measured (per measure and label), read against its own base."""
    shards = load(store, refs, 1 if fill else at_least)
    base = shards[0].rows["run"]["base"]
    shards += [f for f in (filling(f, shards, base) for f in load(store, list(fill), 0)) if f]
    if len(shards) < at_least:
        raise PgolabError(f"merge takes {at_least} shards or more, and the fill runs added nothing the shards lack",
                          hint="name each shard's run or run file")
    if any(s.rows["run"]["base"] != base for s in shards):
        raise PgolabError("the shards have different bases", hint="merge shards of one matrix command")
    check_same_experiment(shards)
    anchor = check_anchor(shards, base)
    groups = by_cpu_model(shards)
    if len(groups) == 1:
        rows = merged_rows(shards, name, command, notes=[*notes, *anchor, *check_labels(shards, base)])
        return Merged(store.add_rows(rows, hint=ANOTHER_MERGE)[0])
    clock = clock_modes()
    measured = {s["mode"] for shard in shards for s in shard.rows["samples"]}
    notes = [*notes, *anchor, *check_labels(shards, base, clock)]
    group_notes = {model: check_anchor(group, base) + check_labels(group, base, measured - clock)
                   for model, group in groups.items()}
    names = per_cpu_names(name, [model for model, group in groups.items()
                                 if any(s["mode"] in clock for shard in group for s in shard.rows["samples"])])
    left_out = sorted(clock & measured)
    if left_out:
        notes.append(f"{', '.join(left_out)} not merged: the shards ran on {len(groups)} CPU models, and wall-clock "
                     f"figures hold for one; each model's shards are merged apart: {', '.join(names.values())}")
    run_id = store.add_rows(merged_rows(shards, name, command, clock, notes, names), hint=ANOTHER_MERGE)[0]
    per_cpu = {}
    for model, run_name in names.items():
        rows = merged_rows(groups[model], run_name, command, measured - clock,
                           [f"the wall-clock figures of the shards on {model}; every shard's cost is in {name}",
                            *group_notes[model]])
        per_cpu[model] = store.add_rows(rows, hint=ANOTHER_MERGE)[0]
    return Merged(run_id, per_cpu)
