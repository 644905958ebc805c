"""The search for the fastest build of one source (`pgolab best`).

It starts from the published table's best build and adds one axis at a time: each round builds
every variant one axis beyond the current build and measures them against it in cost mode; the
candidate whose estimated cycles per query are lowest is kept if its whole interval (which carries
the cost model's repeatability bound) lies beyond the gain asked for, and the next round starts
from it. The search ends when no candidate gains that much, no axis is left, or the time budget is
spent. The winner and the runner-up are then confirmed in QPS against the start and the reference
binaries (the distribution's server); the winner with each axis only the clock can judge (its code on
huge pages: cost mode simulates no TLB) is measured there too, against the winner.

The search is a pure function of what each round measured; an executor builds and measures a round
(a matrix run), so a fake executor tests the path in milliseconds. A round is an ordinary stored
matrix run: running the same command again re-reads the rounds already measured and goes on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from . import paths
from .build import order_refusal
from .document import Column, Report, Table
from .errors import PgolabError
from .matrix import MatrixProgress, MatrixRequest, run_matrix
from .measurement import CLOCK_FIGURE, MODEL_FIGURE, figures
from .bench import BINDING_KEYS, experiment_identity
from .measures import MEASURES, host_records, of_modes
from .measures.cost import cycle_parts
from .record import BinaryInfo, BuildRecord
from .report import analysis_of
from .sources import content_digest, file_digest
from .stages.pgo import PROFILE_IMPORT
from .stats import Estimate
from .store import Store, StoredRun, StoredTarget, identity_difference
from .variants import AXES, Axis, Variant, parse

# The best build of the published MySQL 8.0.28 table (clang PGO+LTO, 1.77x).
START = "rel_lto_pgo_use_clang"


def candidates(current: Variant, axes: tuple[Axis, ...] = AXES) -> list[Variant]:
    """Every build one axis beyond `current`: an axis it lacks, added (none taken away), where the
    grammar allows the result (`_partial` is gcc's, for instance)."""
    found = []
    for axis in axes:
        if getattr(current, axis.field) != axis.without:
            continue
        try:
            found.append(parse(replace(current, **{axis.field: axis.with_}).name))
        except PgolabError:
            continue
    return found


def qps_only(current: Variant, axes: tuple[Axis, ...] = AXES) -> list[Variant]:
    """The builds one axis of `axes` beyond `current` that cost mode cannot judge, code on huge pages
    (callgrind simulates no TLB): the rounds leave them out, the QPS confirmation measures them."""
    return [c for c in candidates(current, axes) if c.on_huge_pages and not current.on_huge_pages]


def axis_added(current: Variant, candidate: Variant) -> str:
    """The report name of the one axis `candidate` adds to `current`."""
    return next(a.name for a in AXES
                if (getattr(current, a.field), getattr(candidate, a.field)) == (a.without, a.with_))


@dataclass(frozen=True)
class Round:
    index: int                        # 1, 2, ...
    current: str                      # the build the round started from
    ratios: dict[str, Estimate]       # candidate -> estimated cycles, current / candidate (> 1: cheaper)
    kept: str | None                  # the candidate the next round starts from; None: the search ended
    run: str = ""                     # the stored run that measured it
    skipped: dict[str, str] = field(default_factory=dict)   # candidate -> why it was not measured


@dataclass
class SearchResult:
    start: str
    min_gain: float
    rounds: list[Round] = field(default_factory=list)
    stopped: str = ""                 # why the search ended

    @property
    def winner(self) -> str:
        kept = [r.kept for r in self.rounds if r.kept]
        return kept[-1] if kept else self.start

    def against_start(self) -> dict[str, float]:
        """Every build measured -> its estimated-cycles ratio against the start: the ratios along the
        path multiplied (each round measured its candidates against the build it started from)."""
        total = {self.start: 1.0}
        for r in self.rounds:
            for name, estimate in r.ratios.items():
                total[name] = total[r.current] * estimate.value
        return total

    def runner_up(self) -> str | None:
        """The build measured cheapest after the winner, the start included; None if there is none."""
        ranked = sorted(((v, k) for k, v in self.against_start().items() if k != self.winner), reverse=True)
        return ranked[0][1] if ranked else None


def keep(ratios: dict[str, Estimate], min_gain: float) -> str | None:
    """The cheapest candidate, if its interval lies wholly above 1 + min_gain."""
    estimable = {k: e for k, e in ratios.items() if e.low is not None}
    if not estimable:
        return None
    name = max(estimable, key=lambda k: (estimable[k].value, k))
    return name if estimable[name].low > 1 + min_gain else None


class RoundExecutor(Protocol):
    def measure(self, index: int, current: Variant, candidates: list[Variant]) -> tuple[str, dict[str, Estimate]]:
        """Build the round's variants, measure each candidate against `current`; (run name, ratios)."""
        ...

    def spent_hours(self) -> float:
        """Wall time the search's rounds have taken so far, all invocations together."""
        ...

    def unmeasurable(self, candidate: Variant) -> str | None:
        """Why this machine cannot measure the candidate, or None."""
        ...


def search(start: Variant, executor: RoundExecutor, min_gain: float = 0.0,
           budget_hours: float | None = None, axes: tuple[Axis, ...] = AXES) -> SearchResult:
    if min_gain < 0:   # a kept build must be cheaper than the one before it: the path only gains
        raise PgolabError(f"--min-gain {min_gain:.1%} is below 0: the search would keep a build costlier than "
                          "the one before it", hint="give 0 (any gain its interval shows) or more, e.g. 1%")
    result = SearchResult(start.name, min_gain)
    current = start
    while True:
        options = candidates(current, axes)
        if not options:
            result.stopped = f"no axis is left to add to {current.name}"
            return result
        if budget_hours is not None and executor.spent_hours() >= budget_hours:
            result.stopped = f"the budget of {budget_hours:g} h is spent ({executor.spent_hours():.2f} h)"
            return result
        index = len(result.rounds) + 1
        skipped = {c.name: why for c in options if (why := executor.unmeasurable(c))}
        measured = [c for c in options if c.name not in skipped]
        run, ratios = executor.measure(index, current, measured) if measured else ("", {})
        kept = keep(ratios, min_gain)
        result.rounds.append(Round(index, current.name, ratios, kept, run, skipped))
        if kept is None:
            result.stopped = (f"no build one axis beyond {current.name} is cheaper by more than "
                              f"{min_gain:.1%} with its whole interval")
            return result
        current = parse(kept)


def path_report(result: SearchResult, source: str, confirm_run: str | None = None,
                machines: dict[str, str] | None = None, rebuilt: tuple[int, ...] = (),
                held_back: dict[tuple[int, str], str] | None = None, final: str = "",
                confirmed: list[str] = ()) -> Report:
    """The path the search took, one row per build measured, as a report of its own; `machines` names
    the machine of each round's run (rounds read from another machine's store were measured there);
    `rebuilt`, the rounds whose start is another binary than the build the round before kept
    (`rebuilt_starts`); `held_back`, by (round, build), the part of the cycle formula that held the
    build back against the round's start (measures.cost.CycleParts.held_back_by); `final`, where the
    winner's binary is (final_binary); `confirmed`, the winner in the QPS confirmation
    (confirmation_lines)."""
    machines, held_back = machines or {}, held_back or {}
    total = result.against_start()
    rows = []
    for r in result.rounds:
        for name, estimate in sorted(r.ratios.items(), key=lambda kv: -kv[1].value):
            rows.append({"round": r.index, "from": r.current, "axis": axis_added(parse(r.current), parse(name)),
                         "build": name, "rcost": estimate, "verdict": estimate.verdict(),
                         "against_start": round(total[name], 4),
                         "kept": "kept" if name == r.kept else "", "run": r.run,
                         "held_back": held_back.get((r.index, name), ""), "machine": machines.get(r.run, "")})
        for name, why in r.skipped.items():
            rows.append({"round": r.index, "from": r.current, "axis": axis_added(parse(r.current), parse(name)),
                         "build": name, "rcost": None, "verdict": f"not measured: {why}", "against_start": None,
                         "kept": "", "run": "", "held_back": "", "machine": ""})
    table = Table("best_path", "The search: each round's builds against the build it started from (cost mode)",
                  [Column("round", "round"), Column("from", "from"), Column("axis", "axis added"),
                   Column("build", "build"), Column("rcost", "rCost"), Column("verdict", "verdict"),
                   Column("against_start", f"rCost vs {result.start}"), Column("kept", "kept"),
                   Column("held_back", "held back by"), Column("run", "stored run"),
                   Column("machine", "measured on")], rows,
                  note="rCost: estimated cycles per query of the round's start over the build's (> 1: cheaper); "
                       "a build is kept when its whole interval lies above 1 + the gain asked for. "
                       "The column against the start multiplies the ratios along the path; where rounds were "
                       "measured on different machines, their PGO builds are different binaries of one variant. "
                       "Held back by: the part of the cycle formula (instructions, I1, D1 or LL misses, "
                       "mispredictions) on which the build spent half a point or more of the round's start's "
                       "cycles beyond what the start spent there, else the largest part of what it still spends, "
                       "which bounds what is left to save (the round run's report has every part, per group).")
    runner_up = result.runner_up()
    facts = [f"source {source}; start {result.start}; minimum gain {result.min_gain:.1%}",
             f"winner {result.winner} (estimated cycles {total[result.winner]:.3f}x cheaper than the start); "
             f"runner-up {runner_up or 'none'}",
             f"stopped: {result.stopped}"]
    if runner_up and total[runner_up] > total[result.winner]:
        facts.append(_why_not_kept(result, runner_up, total))
    if final:
        facts.append(final)
    if (winner_held := next((held_back[(r.index, r.kept)] for r in result.rounds
                             if r.kept == result.winner and (r.index, r.kept) in held_back), None)):
        facts.append(f"what holds the winner back against the build before it: {winner_held}")
    if rebuilt:
        facts.append(f"round {', '.join(map(str, rebuilt))} started from another binary of the build the round "
                     "before kept (built again, on another machine): each round compares its builds in one run, "
                     "but the column against the start multiplies ratios across those binaries; the QPS "
                     "confirmation compares the winner with the start directly")
    if confirm_run:
        facts.append(f"QPS confirmation: stored run {confirm_run} (its report follows)")
    facts += confirmed
    return Report(f"pgolab best: {source}", facts, [table], [])


def _why_not_kept(result: SearchResult, name: str, total: dict[str, float]) -> str:
    """Why a build whose ratios multiply to more than the winner's against the start is not the winner.
    Its round kept none: a round that keeps a build keeps its cheapest, and every later round multiplies
    the winner's by more than 1, so no build of a round that kept one is above the winner."""
    said = f"{name} multiplies to {total[name]:.3f} against the start, above the winner's {total[result.winner]:.3f}"
    measured = next((r for r in result.rounds if name in r.ratios), None)
    if measured is None or measured.kept is not None:   # not so while min_gain >= 0 (search refuses less)
        return said
    return (f"{said}, but round {measured.index} kept none, since its cheapest candidate's whole interval "
            f"did not lie above {1 + result.min_gain:.3f}")


def stored_path_report(store: Store, result: SearchResult, source: str, confirm_run: str | None = None) -> Report:
    """path_report with what the store says of the rounds' runs: each one's machine, which rounds
    started from another binary (rebuilt_starts), and what held each build back (cycle parts)."""
    machines, held_back = {}, {}
    for r in result.rounds:
        if not r.run or (run := store.run(r.run)) is None:
            continue
        machines[run.name] = f"{run.host.hostname}, {run.host.model()}"
        _, analysis = analysis_of(store, run.id, r.current)
        for name in r.ratios:
            if (parts := cycle_parts(analysis, name, analysis.micros)) is not None:
                held_back[(r.index, name)] = parts.held_back_by()
    return path_report(result, source, confirm_run, machines, rebuilt_starts(store, result), held_back,
                       final_binary(store, result, confirm_run), confirmation_lines(store, result, confirm_run))


def confirmation_lines(store: Store, result: SearchResult, confirm_run: str | None) -> list[str]:
    """The winner in the QPS confirmation against its start and each reference binary (--binary), in
    the clock's figures with their intervals: the comparison a target such as '1.45x Debian's' is read
    from (each pair measured in the same blocks); then each of its QPS-only twins against it."""
    run = store.run(confirm_run) if confirm_run else None
    if run is None:
        return []
    targets = store.targets(run.id)
    labels = {t.label for t in targets}
    if result.winner not in labels:
        return []
    references = [run.base, *(t.label for t in targets if t.kind == BinaryInfo.kind)]
    pairs = [(reference, result.winner) for reference in references if reference != result.winner]
    # The winner's QPS-only twins (code on huge pages), each against the winner.
    pairs += [(result.winner, twin.name) for twin in qps_only(parse(result.winner)) if twin.name in labels]
    lines = []
    for reference, build in pairs:
        _, analysis = analysis_of(store, run.id, reference)
        summaries = [(figure, estimates.summary()) for figure in figures(CLOCK_FIGURE.mode)
                     if (estimates := analysis.estimates(figure, reference, build)) is not None]
        said = [f"{figure.ratio_name} {summary.fmt()} ({summary.verdict()})" for figure, summary in summaries]
        if said:
            lines.append(f"{build} against {reference} in the QPS confirmation: {', '.join(said)}")
    return lines


def final_binary(store: Store, result: SearchResult, confirm_run: str | None = None) -> str:
    """Where the winner's binary is: the newest file that a run of the search (its rounds, then the QPS
    confirmation) measured as the winner and that this machine still holds, by digest; else what the
    newest run measured it as, where, and how to have it here."""
    names = [*(r.run for r in result.rounds if r.run), *filter(None, [confirm_run])]
    measured = [found for name in names if (found := _measured(store, name, result.winner)) is not None]
    if not measured:
        return f"final binary: {result.winner}, which no stored run measured"
    kept = next((r.run for r in result.rounds if r.kept == result.winner), None)
    kept_digest = next((t.binary_digest for run, t in measured if run.name == kept), None)
    for run, target in reversed(measured):
        path = Path(target.server_binary)
        if path.is_file() and file_digest(path) == target.binary_digest:
            other = (f"; another binary of {result.winner} than the one run {kept} measured and kept "
                     f"(sha256 {kept_digest[:12]}), built again since" if kept_digest not in (None, target.binary_digest)
                     else "")
            return f"final binary: {path} (sha256 {target.binary_digest[:12]}, the file run {run.name} measured{other})"
    run, target = measured[-1]
    where = (f"{target.server_binary} has changed since run {run.name} measured it as sha256 {target.binary_digest[:12]}"
             if Path(target.server_binary).exists() else
             f"not on this machine; run {run.name} measured {result.winner} as sha256 {target.binary_digest[:12]} "
             f"on {run.host.model()}")
    return (f"final binary: {where}. The same `pgolab best` command without --no-confirm builds it here for its "
            f"QPS confirmation, with the search's training (a PGO build trains again, another binary of the variant, "
            f"unless --profiles holds the profile the search kept)")


def _measured(store: Store, run_name: str, label: str) -> tuple[StoredRun, StoredTarget] | None:
    """The stored run of that name and its target of that label, if both are there."""
    run = store.run(run_name)
    target = next((t for t in store.targets(run.id) if t.label == label), None) if run is not None else None
    return (run, target) if target is not None else None


def rebuilt_starts(store: Store, result: SearchResult) -> tuple[int, ...]:
    """The rounds whose start, in their run, is another binary than the candidate the round before
    kept, in that round's run (a round read from another machine's store, then one built here)."""
    def digest(run: str, label: str) -> str | None:
        return found[1].binary_digest if (found := _measured(store, run, label)) is not None else None
    return tuple(after.index for before, after in zip(result.rounds, result.rounds[1:])
                 if before.kept and after.run and before.run
                 and digest(before.run, before.kept) != digest(after.run, after.current))


def spent_hours(run_names: list[str]) -> float:
    """The wall time of these matrix runs on this machine, from the timing log every matrix invocation
    appends to here: a round read from a store measured elsewhere took none of this machine's time."""
    seconds = 0.0
    for name in run_names:
        log = paths.runs_dir() / name / "matrix-timing.jsonl"
        if log.exists():
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                seconds += entry["build_seconds"] + entry["bench_seconds"]
    return seconds / 3600


class MatrixRounds:
    """The real executor: each round a matrix of the round's start and its candidates (builds up to
    date are skipped), measured in cost mode against the start, in one store. The stored run is
    named after the round and the binaries. A round the store holds a finished run of (the same
    labels, source, training and options, measured on any machine: a committed store brought to a new
    one, whose PGO builds are other binaries) is read from that run, not built and measured again: a
    round compares its builds within one run, so its verdict stands, and the search goes on where it
    stopped."""

    def __init__(self, request: MatrixRequest, store: Store, progress: MatrixProgress, command: str,
                 say=lambda line: None):
        self.request, self.store, self.progress, self.command, self.say = request, store, progress, command, say
        self.runs: list[str] = []
        self._contents: dict[Path, str] = {}     # each source tree's content digest, read once
        self._experiment: dict | None = None      # this search's experiment identity, made once
        self._measures: list = []

    def finished_round(self, index: int, current: Variant, candidates: list[Variant]) -> StoredRun | None:
        """The newest finished run of this round of the search, measured as one run (not merged), of
        the same experiment (`_same_experiment`) and builds (`_same_builds`), if any."""
        name = re.compile(re.escape(f"{self.request.run_name}-round{index}-") + "[0-9a-f]+")
        labels = {current.name, *(c.name for c in candidates)}
        return next((run for run in reversed(self.store.runs())
                     if name.fullmatch(run.name) and run.status == "finished" and run.merged is None
                     and run.base == current.name and self._same_experiment(run)
                     and self._same_builds(run, labels)), None)

    def _same_experiment(self, run: StoredRun) -> bool:
        """The run's stored identity, as far as it is the experiment (bench.experiment_identity) and
        not the machine: what a measure records of the host it ran on (its host_record keys, such as
        valgrind's version) may differ, since a finished round is read, not continued."""
        if self._experiment is None:
            options = self.request.options
            server = "+".join(sorted({tree.server for tree in self.request.sources}))
            self._measures = of_modes(options.modes)
            self._experiment = json.loads(json.dumps(experiment_identity(server, options, self._measures, False)))
        stored = {k: v for k, v in run.identity.items() if k not in BINDING_KEYS}
        tolerated = host_records(self._measures)
        if self.request.options.cost_tolerance is None:
            tolerated.add("options.cost_tolerance")   # run_bench filled in the servers' own
        return all(key in tolerated for key in identity_difference(stored, self._experiment))

    def _same_builds(self, run: StoredRun, labels: set[str]) -> bool:
        """The run's targets are these labels, each a build of the search's source tree (by content
        where the record has it, else by version), and each trained build trained as this search
        trains (by the training's digest where the record has it, else by its load's label)."""
        targets = self.store.targets(run.id)
        trees = {(tree.server, tree.version): tree for tree in self.request.sources}
        train = self.request.train

        def same(record) -> bool:
            tree = trees.get((record.server, record.source.version)) if isinstance(record, BuildRecord) else None
            if tree is None:
                return False
            if record.source.content_digest:
                if tree.path not in self._contents:
                    self._contents[tree.path] = content_digest(tree.path)
                if record.source.content_digest != self._contents[tree.path]:
                    return False
            if record.training is None:      # pgolab records a training for every trained build
                return not (variant := parse(record.variant)).reads_profile and not variant.bolt
            if (imported := record.profile.get(PROFILE_IMPORT)) is not None:   # --profiles: the file's training
                return imported.get("training_digest") == train.digest() and imported.get("trained_build") in (
                    None, "", parse(record.variant).profile_source().name)
            return record.training == train.label and record.training_digest in (None, train.digest())
        return {t.label for t in targets} == labels and all(same(t.description) for t in targets)

    def measure(self, index: int, current: Variant, candidates: list[Variant]) -> tuple[str, dict[str, Estimate]]:
        if (earlier := self.finished_round(index, current, candidates)) is not None:
            self.say(f"round {index}: read from the finished run {earlier.name} (measured on "
                     f"{earlier.host.model()}), not built or measured again")
            run_id = earlier.id
        else:
            request = replace(self.request, variants=[current, *candidates], base=current.name,
                              run_name=f"{self.request.run_name}-round{index}-{{binaries}}", binaries=[])
            run_id = run_matrix(request, self.store, self.progress, self.command).run_id
        run, analysis = analysis_of(self.store, run_id)
        self.runs.append(run.name)
        ratios = {}
        for c in candidates:
            estimates = analysis.estimates(MODEL_FIGURE, current.name, c.name)
            if estimates is None:
                raise PgolabError(f"round {index}: run {run.name} holds no cost figures of {c.name}",
                                  hint="the run did not finish; run the same command again")
            ratios[c.name] = estimates.summary()
        return run.name, ratios

    def spent_hours(self) -> float:
        return spent_hours(self.runs)

    def unmeasurable(self, candidate: Variant) -> str | None:
        if (why := MEASURES[MODEL_FIGURE.mode].variant_unavailable(candidate)) is not None:
            return why
        if candidate.on_huge_pages:
            return ("huge pages change the TLB's work, which cost mode does not simulate (the QPS confirmation "
                    "measures this axis on the winner)")
        return next((why for tree in self.request.sources
                     if (why := order_refusal(candidate, tree.server)) is not None), None)

    def confirm(self, result: SearchResult, axes: tuple[Axis, ...] = AXES) -> int:
        """The winner, the runner-up and the start in QPS, with the reference binaries and the winner's
        QPS-only twins among `axes`; the run's id."""
        twins = [v.name for v in qps_only(parse(result.winner), axes)]
        names = list(dict.fromkeys(n for n in (result.start, result.winner, result.runner_up(), *twins) if n))
        options = replace(self.request.options, modes=("qps",))
        request = replace(self.request, variants=[parse(n) for n in names], base=result.start, options=options,
                          run_name=f"{self.request.run_name}-confirm-{{binaries}}")
        return run_matrix(request, self.store, self.progress, self.command).run_id
