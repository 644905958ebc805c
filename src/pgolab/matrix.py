"""The build matrix: build many variants of one or more sources, cheapest first, then benchmark
them all in one stored run (`pgolab matrix`). Several sources make a version series: every
variant of every tree, at equal optimization, labelled `<server>-<version>:<variant>`.

Every build is the ordinary build pipeline, so one that is up to date is skipped and an
interrupted one continues; the benchmark is the ordinary resumable run. Running the same
command again after an interrupt anywhere therefore continues where it stopped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from . import bench, paths, replicates
from . import labels as target_labels
from . import variants as variants_mod
from .build import BuildRequest, BuildResult, Pipeline, keep_profile, require_buildable, with_profile_from
from .errors import PgolabError
from .fleet import BenchTarget
from .host import Host
from .measurement import BenchOptions
from .measures import Measure, of_modes
from .phases import Reporter, ShownOnceReporter
from .schedule import Progress
from .sources import SourceTree, tree_digest
from .stages.pgo import PROFILE_READY
from .store import Store, not_built_note
from .toolchains import compiler_family
from .variants import Variant
from .workloads import TrainingSpec


def choose(spec: str, bolt: bool = False) -> list[Variant]:
    """published | all | NAME,NAME,...; --bolt adds the `_bolt` twin of every PGO build chosen."""
    if spec == "published":
        chosen = variants_mod.published()
    elif spec == "all":
        chosen = [v for v in variants_mod.all_variants() if not v.writes_profile]
    else:
        chosen = [variants_mod.parse(name.strip()) for name in spec.split(",") if name.strip()]
    if not chosen:
        raise PgolabError(f"no variants in {spec!r}", hint="published, all, or names separated by commas")
    if bolt:
        chosen += [replace(v, bolt=True) for v in chosen if v.pgo == "use" and not v.bolt]
    return list(dict.fromkeys(chosen))


def relative_cost(v: Variant) -> float:
    """A build's cost in plain builds, as measured here (MariaDB 10.11 on 2 cores): a PGO cycle is
    about two builds plus training, a context-sensitive one a third; LTO links slowly; BOLT adds an
    instrumented training."""
    return _own_cost(v) + _instrumented_cost(v) + _training_cost(v)


def _compile_cost(v: Variant) -> float:
    return 1.6 if v.lto else 1.0


def _own_cost(v: Variant) -> float:
    """What no other build shares: its own compile, with BOLT's training."""
    return _compile_cost(v) + (0.4 if v.bolt else 0.0) + compiler_family(v.compiler).extra_build_cost


def _instrumented_cost(v: Variant) -> float:
    """The instrumented build(s) a PGO build compiles with: _pgo_gen's, and _pgo_csgen's for _cs."""
    if v.pgo != "use":
        return 0.0
    return _compile_cost(v) * 1.1 + (1.1 if v.cs else 0.0)


def _training_cost(v: Variant) -> float:
    return 0.2 if v.pgo == "use" else 0.0


def group_cost(members: list[Variant]) -> float:
    """A training group's cost: its members share one instrumented build (training_groups), and a twin
    whose profile source is in the group compiles with that training's profile, so it pays no
    training either."""
    own = sum(map(_own_cost, members))
    instrumented = {v.instrumented().name: _instrumented_cost(v) for v in members if v.pgo == "use"}
    trainings = sum(_training_cost(v) for v in members if v.profile_twin() not in members)
    return own + sum(instrumented.values()) + trainings


def parse_shard(text: str) -> tuple[int, int]:
    """--shard K/N: the K-th of N shares, 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise PgolabError(f"--shard takes K/N with 1 <= K <= N, got {text!r}", hint="e.g. --shard 2/3")
    return k, n


def training_groups(chosen: list[Variant]) -> list[list[Variant]]:
    """The builds that go together, most costly first (ties by name): a PGO variant and the builds
    that read its profile (its _bolt, _split, _hotcold and link-only twins) share one training; any
    other build stands alone."""
    groups: dict[str, list[Variant]] = {}
    for v in chosen:
        key = v.instrumented().name if v.reads_profile else v.name    # (twins share their source's)
        groups.setdefault(key, []).append(v)
    return [members for _, members in sorted(groups.items(), key=lambda g: (-group_cost(g[1]), g[0]))]


def shard_of(chosen: list[Variant], k: int, n: int) -> list[Variant]:
    """The K-th of N shares of a matrix, the same on every machine: each training group goes to the
    share with the least cost so far (ties to the lower share). The base is not assigned: every
    shard builds and measures it, as the anchor `pgolab merge` checks."""
    load, assigned = [0.0] * n, [[] for _ in range(n)]
    for members in training_groups(chosen):
        share = min(range(n), key=lambda i: (load[i], i))
        load[share] += group_cost(members)
        assigned[share] += members
    return [v for v in chosen if v in assigned[k - 1]]


def build_order(chosen: list[Variant]) -> list[Variant]:
    """Cheapest first (so most of the matrix exists early); ties keep the order given."""
    return sorted(chosen, key=relative_cost)


@dataclass
class MatrixRequest:
    sources: list[SourceTree]
    variants: list[Variant]
    base: str
    train: TrainingSpec
    options: BenchOptions
    run_name: str
    binaries: list[BenchTarget] = field(default_factory=list)   # e.g. Debian's server, by --binary
    jobs: int = 2
    use_ccache: bool = True
    shard: tuple[int, int] | None = None     # (K, N): build and measure the K-th share, and the base
    replicates: int = 1                      # builds of each variant (replicates.py), the base's too
    # A folder of PGO profiles: a PGO build compiles with the one its training made on another machine
    # (the same binary, so a run begun there goes on here), and one trained here is exported into it.
    profiles: Path | None = None


class MatrixProgress(Protocol):
    def left_out(self, variant: Variant, reason: str) -> None: ...
    def build_started(self, index: int, total: int, variant: Variant) -> Reporter: ...
    def build_finished(self, index: int, total: int, result: BuildResult, seconds: float) -> None: ...
    def bench_step(self, state: Progress) -> None: ...


@dataclass
class MatrixResult:
    run_id: int
    builds: list[BuildResult]
    build_seconds: float      # wall time of this invocation's build part
    bench_seconds: float
    timing_log: Path | None = None   # every invocation's wall time, one JSON line each
    left_out: dict[str, str] = field(default_factory=dict)   # variant -> why it was not built


def unavailable_by_measure(chosen: list[Variant], options: BenchOptions) -> list[tuple[Measure, dict[str, str]]]:
    """Each measure of the run, with the variants it cannot measure on this machine and why (known
    before building: a -march=native build in cost mode on a CPU with AVX-512)."""
    return [(m, {v.name: why for v in chosen if (why := m.variant_unavailable(v)) is not None})
            for m in of_modes(options.modes)]


def unmeasurable_here(chosen: list[Variant], base: str, options: BenchOptions) -> dict[str, str]:
    """The variants (the base aside) that no measure of the run can measure on this machine, each with
    why: building them would cost a build and measure nothing (a -march=native build in a cost-only
    run on a CPU with AVX-512; a shard of them is measured on another CPU)."""
    by_measure = unavailable_by_measure(chosen, options)
    return {v.name: "; ".join(f"{m.key}: {out[v.name]}" for m, out in by_measure)
            for v in chosen if v.name != base and by_measure and all(v.name in out for _, out in by_measure)}


def check_comparable(request: MatrixRequest, chosen: list[Variant], base: str, series: bool) -> None:
    """The run's own rule (bench.check_measurable), before any build: each measure, given the targets
    this matrix would measure (every tree, replicate and --binary) and those it cannot measure here,
    must have something to compare, and measure the base."""
    planned = {target_label(tree, replicates.label(v.name, k), series): v.name
               for tree in request.sources for v in chosen for k in range(1, request.replicates + 1)}
    left_out = {m.key: {**{label: out[name] for label, name in planned.items() if name in out},
                        **m.unavailable(request.binaries)}
                for m, out in unavailable_by_measure(chosen, request.options)}
    bench.check_measurable(base, [*planned, *(b.label for b in request.binaries)], left_out)


def _stored_variants(store: Store, run_name: str) -> set[str]:
    """The variants a stored run of this very name already holds: a run this matrix continues keeps
    its targets, so a variant built before the not-built rule is built (found up to date) again."""
    run = store.run(run_name) if "{" not in run_name else None
    return {target_labels.split(t.label)[1] for t in store.targets(run.id)} if run else set()


def target_label(source: SourceTree, build_label: str, series: bool) -> str:
    """A build's label in the run: its own, or with its server and version when trees are mixed."""
    return target_labels.in_tree(source.label, build_label) if series else build_label


def run_matrix(request: MatrixRequest, store: Store, progress: MatrixProgress, command: str) -> MatrixResult:
    series = len(request.sources) > 1
    base_variant = target_labels.split(request.base)[1]
    chosen = list(request.variants)
    if request.shard is not None:
        chosen = shard_of([v for v in chosen if v.name != base_variant], *request.shard)
    base_is_binary = request.base in [b.label for b in request.binaries]
    if not base_is_binary and base_variant not in [v.name for v in chosen]:
        chosen.insert(0, variants_mod.parse(base_variant))
    base = request.base
    if series and not target_labels.split(base)[0] and not base_is_binary:
        base = target_label(request.sources[0], base, series)
    check_comparable(request, chosen, base, series)
    kept = _stored_variants(store, request.run_name)
    left_out = {name: why for name, why in unmeasurable_here(chosen, base_variant, request.options).items()
                if name not in kept}
    for variant in chosen:
        if variant.name in left_out:
            progress.left_out(variant, left_out[variant.name])
    chosen = [v for v in chosen if v.name not in left_out]
    started = time.monotonic()
    built_in_trees = build_all(request, chosen, progress)
    results = [result for _, result in built_in_trees]
    targets = [BenchTarget(target_label(tree, result.record.label, series), result.record.kind,
                           result.record.installation(), result.record) for tree, result in built_in_trees]
    built = time.monotonic()
    cpu = Host.this().model() if left_out else ""
    # Every replicate label of a variant left out is named: a merge drops the note only once all are measured.
    notes = [not_built_note(replicates.labels(name, request.replicates),
                            f"which no measure of this run can measure on {cpu} ({why})") for name, why in left_out.items()]
    run_id = bench.run_bench(store, request.run_name, base, targets + request.binaries, request.options,
                             command, progress.bench_step, notes=notes)
    result = MatrixResult(run_id, results, built - started, time.monotonic() - built, left_out=left_out)
    result.timing_log = _log_timing(store.run(run_id).name, result)
    return result


def build_all(request: MatrixRequest, chosen: list[Variant],
              progress: MatrixProgress) -> list[tuple[SourceTree, BuildResult]]:
    """Every chosen variant of every tree (and its replicates), tree by tree in the order given, each
    tree's variants cheapest first; every refusal before the first build."""
    order = [(tree, v, k) for tree in request.sources for v in build_order(chosen)
             for k in range(1, request.replicates + 1)]
    for tree, variant, _ in order:
        require_buildable(variant, tree.server)
    built, tree_digests = [], {}
    for i, (tree, variant, k) in enumerate(order):
        t0 = time.monotonic()
        # (With --profiles a build runs in two calls, its training first: its phases are shown once.)
        reporter = ShownOnceReporter(progress.build_started(i, len(order), variant))
        build_request = BuildRequest(tree, variant, request.train, jobs=request.jobs,
                                     use_ccache=request.use_ccache, profiles=request.profiles).replicate_of(k)
        if tree.path not in tree_digests:      # (one walk of a tree per matrix, not two per build)
            tree_digests[tree.path] = tree_digest(tree.path)
        digest = tree_digests[tree.path]
        if request.profiles is not None:
            build_request = with_profile_from(build_request, request.profiles, reporter, digest)
        pipeline = Pipeline(build_request, reporter, source_digest=digest)
        if request.profiles is not None and pipeline.variant.reads_profile and build_request.profile_file is None:
            # The training first, and its profile kept before the optimized compile.
            pipeline.profile_owner.run(until=PROFILE_READY)
            if (kept := keep_profile(pipeline, request.profiles)) is not None:
                reporter.message(kept)
        result = pipeline.run()
        if (kept := pipeline.keep_bolt_profile()) is not None:
            reporter.message(f"BOLT {kept}")
        built.append((tree, result))
        progress.build_finished(i, len(order), result, time.monotonic() - t0)
    return built


def _log_timing(run_name: str, result: MatrixResult) -> Path:
    """Each invocation's wall time, appended: a resumed matrix's total is the sum."""
    path = paths.runs_dir() / run_name / "matrix-timing.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "builds": len(result.builds),
             "built_now": sum(1 for b in result.builds if not b.up_to_date),
             "build_seconds": round(result.build_seconds, 1), "bench_seconds": round(result.bench_seconds, 1)}
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    return path


def default_run_name(sources: list[SourceTree], options: BenchOptions, shard: tuple[int, int] | None = None,
                     replicates: int = 1) -> str:
    name = f"matrix-{'-'.join(s.label for s in sources)}-{options.suite}-{'-'.join(options.modes)}"
    name += f"-{replicates}replicates" if replicates > 1 else ""
    return f"{name}-shard{shard[0]}of{shard[1]}" if shard else name

