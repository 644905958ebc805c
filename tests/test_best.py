"""`pgolab best`'s search with a fake executor: a cost model in which each axis has a known effect,
so the right path is known beforehand. The real executor is a matrix run (tests/test_matrix.py,
tests/test_pipeline_postgresql.py cover those)."""

from dataclasses import dataclass, field

from pgolab import best
from pgolab.stats import Estimate
from pgolab.variants import Variant, parse

# Estimated cycles of the start over a build with the axis added, whatever else the build has.
EFFECT = {"LLVM 19": 1.05, "-march=native": 1.02, "context-sensitive PGO": 0.99, "BOLT": 1.001, "-fno-plt": 1.0,
          "-fno-semantic-interposition": 1.0, "static libstdc++ and libgcc": 0.999, "jemalloc": 0.998,
          "tcmalloc": 0.997, "mimalloc": 0.996, "function order (temporal profile)": 0.995,
          "machine function splitting": 0.998, "hot/cold text sections": 1.0, "huge pages (BOLT -hugify)": 1.0,
          "code on 2 MiB pages (pgolab's copy at start-up)": 1.0}
HALF_WIDTH = 0.005


def estimate(value: float) -> Estimate:
    return Estimate(value, value * (1 - HALF_WIDTH), value * (1 + HALF_WIDTH), 10)


@dataclass
class FakeRounds:
    """Answers each round from EFFECT; counts the hours a round takes."""
    hours_per_round: float = 0.0
    cannot: dict[str, str] = field(default_factory=dict)     # axis name -> why it cannot be measured
    asked: list[tuple[str, list[str]]] = field(default_factory=list)

    def measure(self, index: int, current: Variant, candidates: list[Variant]):
        self.asked.append((current.name, [c.name for c in candidates]))
        return f"round{index}", {c.name: estimate(EFFECT[best.axis_added(current, c)]) for c in candidates}

    def spent_hours(self) -> float:
        return self.hours_per_round * len(self.asked)

    def unmeasurable(self, candidate: Variant) -> str | None:
        return next((why for axis, why in self.cannot.items()
                     if axis == best.axis_added(parse(best.START), candidate) or
                     (axis == "-march=native" and candidate.native)), None)


def test_candidates_are_the_builds_one_axis_beyond():
    names = [v.name for v in best.candidates(parse("rel_lto_pgo_use_clang"))]
    assert names == ["rel_native_lto_pgo_use_clang", "rel_lto_pgo_use_clang19", "rel_lto_pgo_use_cs_clang",
                     "rel_lto_pgo_use_split_clang", "rel_lto_pgo_use_hotcold_clang", "rel_lto_pgo_use_clang_noplt", "rel_lto_pgo_use_clang_nosi", "rel_lto_pgo_use_clang_static",
                     "rel_lto_pgo_use_clang_jemalloc", "rel_lto_pgo_use_clang_tcmalloc",
                     "rel_lto_pgo_use_clang_mimalloc", "rel_lto_pgo_use_clang_hugetext",
                     "rel_lto_pgo_use_clang_bolt"]   # _partial is gcc's, _order LLVM 19's
    assert [v.name for v in best.candidates(parse("rel_native_lto_pgo_use_cs_clang19_noplt_nosi_static_mimalloc_bolt"))] == [
        "rel_native_lto_pgo_use_cs_split_clang19_noplt_nosi_static_mimalloc_bolt",
        "rel_native_lto_pgo_use_cs_hotcold_clang19_noplt_nosi_static_mimalloc_bolt",
        "rel_native_lto_pgo_use_cs_clang19_noplt_nosi_static_mimalloc_hugetext_bolt",
        "rel_native_lto_pgo_use_cs_clang19_noplt_nosi_static_mimalloc_bolt_hugify"]   # _order has no _cs
    full = "rel_native_lto_pgo_use_order_split_hotcold_clang19_noplt_nosi_static_mimalloc_bolt_hugify"
    assert [v.name for v in best.candidates(parse(full))] == []
    assert "rel_lto_pgo_use_order_clang19" in [v.name for v in best.candidates(parse("rel_lto_pgo_use_clang19"))]
    # One allocator: once one is kept, the others are no step of one axis.
    assert {v.allocator for v in best.candidates(parse("rel_lto_pgo_use_clang_jemalloc"))} == {"jemalloc"}
    # gcc's builds have partial training, and clang (LLVM 16) is the next compiler, not LLVM 19.
    gcc = [v.name for v in best.candidates(parse("rel_lto_pgo_use"))]
    assert "rel_lto_pgo_use_partial" in gcc and "rel_lto_pgo_use_clang" in gcc and "rel_lto_pgo_use_clang19" not in gcc


def test_the_search_keeps_the_cheapest_axis_while_its_interval_clears_the_gain():
    rounds = FakeRounds()
    result = best.search(parse(best.START), rounds)
    assert [r.kept for r in result.rounds] == ["rel_lto_pgo_use_clang19", "rel_native_lto_pgo_use_clang19", None]
    assert result.winner == "rel_native_lto_pgo_use_clang19"
    # Round 3: BOLT's 1.001 has an interval reaching below 1, context-sensitive PGO costs more.
    assert len(result.rounds[2].ratios) == 12 and "rel_native_lto_pgo_use_clang19_bolt" in result.rounds[2].ratios
    assert "no build one axis beyond rel_native_lto_pgo_use_clang19" in result.stopped
    total = result.against_start()
    assert abs(total[result.winner] - 1.05 * 1.02) < 1e-9
    # The runner-up is the build measured cheapest after the winner: its BOLT twin (not kept, 1.071).
    assert result.runner_up() == "rel_native_lto_pgo_use_clang19_bolt"
    # Its ratios multiply to more than the winner's: the path says why it is not the winner.
    assert ("rel_native_lto_pgo_use_clang19_bolt multiplies to 1.072 against the start, above the winner's 1.071, "
            "but round 3 kept none, since its cheapest candidate's whole interval did not lie above 1.000"
            ) in best.path_report(result, "postgresql 15.18").facts


def test_a_minimum_gain_stops_the_search_earlier():
    result = best.search(parse(best.START), FakeRounds(), min_gain=0.03)
    assert [r.kept for r in result.rounds] == ["rel_lto_pgo_use_clang19", None]   # -march=native's 2 % is not 3 %
    assert result.winner == "rel_lto_pgo_use_clang19" and result.runner_up() == "rel_native_lto_pgo_use_clang19"
    assert any(f.endswith("but round 2 kept none, since its cheapest candidate's whole interval did not lie above "
                          "1.030") for f in best.path_report(result, "postgresql 15.18").facts)


def test_the_budget_stops_before_a_new_round():
    rounds = FakeRounds(hours_per_round=2.0)
    result = best.search(parse(best.START), rounds, budget_hours=3.0)
    assert len(rounds.asked) == 2 and len(result.rounds) == 2
    assert result.stopped == "the budget of 3 h is spent (4.00 h)"
    assert result.winner == "rel_native_lto_pgo_use_clang19"
    # The runner-up (1.051) multiplies to less than the winner (1.071): no line says why it lost.
    assert not any("multiplies to" in f for f in best.path_report(result, "postgresql 15.18").facts)


def test_a_negative_minimum_gain_is_refused():
    import pytest

    from pgolab.errors import PgolabError
    with pytest.raises(PgolabError, match="below 0"):
        best.search(parse(best.START), FakeRounds(), min_gain=-0.02)


def test_a_candidate_this_machine_cannot_measure_is_left_out_and_said():
    rounds = FakeRounds(cannot={"-march=native": "-march=native enables avx512f here"})
    result = best.search(parse(best.START), rounds)
    assert result.winner == "rel_lto_pgo_use_clang19"
    assert all(not v.native for _, names in rounds.asked for v in map(parse, names))
    assert result.rounds[0].skipped == {"rel_native_lto_pgo_use_clang": "-march=native enables avx512f here"}
    report = best.path_report(result, "postgresql 15.18")
    rows = report.table("best_path").rows
    assert any(r["verdict"].startswith("not measured: -march=native") for r in rows)
    kept = [r for r in rows if r["kept"]]
    assert [r["build"] for r in kept] == ["rel_lto_pgo_use_clang19"] and kept[0]["axis"] == "LLVM 19"
    assert "winner rel_lto_pgo_use_clang19" in report.facts[1]


def test_the_search_is_repeatable_so_a_rerun_resumes_the_same_path():
    first, second = FakeRounds(), FakeRounds()
    assert best.search(parse(best.START), first).rounds == best.search(parse(best.START), second).rounds
    assert first.asked == second.asked


def test_spent_hours_sums_every_invocation_of_the_rounds(tmp_path, monkeypatch):
    from pgolab import paths
    monkeypatch.setattr(paths, "runs_dir", lambda: tmp_path)
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "matrix-timing.jsonl").write_text(
        '{"build_seconds": 3000, "bench_seconds": 600}\n{"build_seconds": 0, "bench_seconds": 1800}\n')
    assert best.spent_hours(["r1", "r2"]) == 1.5


def test_the_search_can_be_kept_to_some_axes():
    from pgolab.errors import PgolabError
    from pgolab.variants import axes_named
    import pytest
    axes = axes_named("bolt, native")
    assert [a.name for a in axes] == ["-march=native", "BOLT"]
    result = best.search(parse(best.START), FakeRounds(), axes=axes)
    assert [sorted(r.ratios) for r in result.rounds][0] == ["rel_lto_pgo_use_clang_bolt", "rel_native_lto_pgo_use_clang"]
    assert result.winner == "rel_native_lto_pgo_use_clang"
    with pytest.raises(PgolabError, match="unknown axis llvm19") as err:
        axes_named("native,llvm19")
    assert "clang19" in err.value.hint


def test_the_path_report_exports_in_every_format(tmp_path):
    from pgolab.render import export
    result = best.search(parse(best.START), FakeRounds())
    chained = best.path_report(result, "postgresql 15.18", machines={"round1": "elsewhere, EPYC"}, rebuilt=(2,))
    assert any(f.startswith("round 2 started from another binary") for f in chained.facts)
    assert not any("another binary" in f for f in best.path_report(result, "postgresql 15.18").facts)
    files = export(best.path_report(result, "postgresql 15.18"), tmp_path)
    assert "rel_native_lto_pgo_use_clang19" in files["markdown"].read_text()
    assert (tmp_path / "best_path.csv").exists() and files["html"].exists()


def test_a_round_a_store_holds_a_finished_run_of_is_read_from_it_on_another_machine(tmp_path, monkeypatch):
    """A store brought to a new machine holds round 1, finished elsewhere: the real executor reads its
    verdict from that run and builds nothing. A run of another experiment or other builds is not read,
    however new: each differs from the one that is read in one respect."""
    from dataclasses import replace

    import pytest

    from pgolab import bench, matrix, sources
    from pgolab.fleet import BenchTarget
    from pgolab.measures.callgrind import CACHE_GEOMETRY, CYCLE_FORMULA
    from pgolab.record import BuildRecord, SourceInfo
    from pgolab.store import Store
    from pgolab.workloads import parse_train
    from test_measures import FakeFleet, FakeInstallation
    from test_merge import OPTIONS, ShardCost
    from test_runfile import another_machine

    start = parse(best.START)
    ahead = best.candidates(start, best.AXES)[:2]
    speeds = {start.name: 1.0, ahead[0].name: 1.10, ahead[1].name: 0.95}
    store = Store(tmp_path / "results.sqlite")
    tree_path = tmp_path / "postgresql-15"
    tree_path.mkdir()
    (tree_path / "configure").write_text("the tree")
    tree = sources.SourceTree(tree_path, "postgresql", "15.18", "test")
    train = parse_train("mix", 60)

    class ModelCost(ShardCost):
        def __init__(self, speeds, cycles=CYCLE_FORMULA, geometry=CACHE_GEOMETRY):
            super().__init__(speeds)
            self.cycles, self.geometry = cycles, geometry

        def identity(self):
            return {"cost_method": {"cache_geometry": self.geometry, "cycles": self.cycles, "valgrind": "elsewhere's"}}

    def stored_round(name: str, options=OPTIONS, base=start.name, content=None, training=train,
                     cycles=CYCLE_FORMULA, status="finished", labels=tuple(speeds), made_here=b"",
                     geometry=CACHE_GEOMETRY, imported: str | None = None, trained_build: str = "") -> None:
        targets = []
        for label in labels:
            binary = tmp_path / name / label
            binary.parent.mkdir(parents=True, exist_ok=True)
            binary.write_bytes(label.encode() + made_here)
            source = SourceInfo(version="15.18", content_digest=content or sources.content_digest(tree_path))
            record = BuildRecord(label, label, "clang", "postgresql", source, {}, {}, str(binary), "/i", "/l",
                                 training=training.label, training_digest=training.digest(), build_seconds=600)
            if imported is not None:     # built from a --profiles file whose training has this digest
                record.training, record.training_digest = f"{training.label} (imported from p.profile.tar.gz)", None
                record.profile = {"profile-import": {"training_digest": imported, "trained_build": trained_build}}
            installation = FakeInstallation(binary, "postgresql", "pgsql")
            targets.append(BenchTarget(label, BuildRecord.kind, installation, record))
        run_id = bench.run_bench(store, name, base, targets, options, "pgolab best (elsewhere)",
                                 measures=[ModelCost(speeds, cycles, geometry)], fleet_factory=FakeFleet)
        store.set_status(run_id, status)

    with monkeypatch.context() as m:
        another_machine(m)
        stored_round("s-round1-0123456789ab")
        # Newer, and each not this round of this search: not read.
        stored_round("s-round1-a1", options=replace(OPTIONS, cost_scale=0.5))
        stored_round("s-round1-a2", content="another tree")
        stored_round("s-round1-a3", training=parse_train("mix", 10))
        stored_round("s-round1-a4", cycles="cycles = Ir")
        stored_round("s-round1-a4a", geometry={"I1": "the host's"})
        stored_round("s-round1-a5", status="interrupted")
        stored_round("s-round1-a6", base=ahead[0].name)
        stored_round("s-round10-a7")
        stored_round("t-round1-a8")
    assert len(store.runs()) == 10

    built = []

    def no_matrix(request, *args, **kwargs):
        built.append(request.run_name)
        raise AssertionError("built and measured again")

    monkeypatch.setattr(best, "run_matrix", no_matrix)
    # Reading a round asks the machine nothing: what valgrind would record of it is not compared.
    from pgolab.measures import cost as cost_measure
    monkeypatch.setattr(cost_measure, "valgrind_version", lambda runner: pytest.fail("valgrind was asked"))
    # Another number of cost servers at once is execution alone: the run is read.
    request = matrix.MatrixRequest([tree], [start], start.name, train, replace(OPTIONS, cost_jobs=7), "s")
    said = []
    rounds = best.MatrixRounds(request, store, None, "pgolab best", say=said.append)
    run, ratios = rounds.measure(1, start, ahead)
    assert run == "s-round1-0123456789ab" and not built
    assert ratios[ahead[0].name].value == pytest.approx(1.10) and ratios[ahead[1].name].value == pytest.approx(0.95)
    stored = store.run(run)
    assert stored.host.hostname == "elsewhere" and said == [
        f"round 1: read from the finished run {run} (measured on {stored.host.model()}), not built or measured again"]
    # It took none of this machine's time: --budget is not spent by reading it.
    assert rounds.spent_hours() == 0.0
    # Round 2 from the kept build has no finished run: it is built and measured here.
    with pytest.raises(AssertionError, match="built and measured again"):
        rounds.measure(2, ahead[0], best.candidates(ahead[0], best.AXES)[:1])
    assert built == ["s-round2-{binaries}"]
    # Asked with the other options, the run of those is read; with a candidate more, none is.
    other = best.MatrixRounds(replace(request, options=replace(OPTIONS, cost_scale=0.5)), store, None, "")
    assert other.measure(1, start, ahead)[0] == "s-round1-a1"
    assert rounds.finished_round(1, start, best.candidates(start, best.AXES)[:3]) is None
    # Round 2 measured here starts from this machine's build of the kept one, another binary: the path says so.
    stored_round("s-round2-c1", base=ahead[0].name, labels=(ahead[0].name, ahead[1].name), made_here=b" here")
    path = best.SearchResult(start.name, 0.0, [best.Round(1, start.name, ratios, ahead[0].name, run),
                                               best.Round(2, ahead[0].name, {}, None, "s-round2-c1")])
    assert best.rebuilt_starts(store, path) == (2,)
    report = best.stored_path_report(store, path, "postgresql 15.18")
    assert any(f.startswith("round 2 started from another binary") for f in report.facts)
    assert {r["machine"] for r in report.table("best_path").rows} == {f"elsewhere, {stored.host.model()}"}
    # What held each build back against the round's start, from the round run's cycle parts: the
    # cheaper build still spends most of its cycles on instructions; the dearer one spent more there.
    held = {r["build"]: r["held_back"] for r in report.table("best_path").rows}
    assert held == {ahead[0].name: "instructions: 45 % of the base's cycles left",
                    ahead[1].name: "instructions: 2.6 points more"}
    assert "what holds the winner back against the build before it: instructions: 45 % of the base's cycles left" \
        in report.facts
    # The winner's binary: the newest file a run measured as the winner that this machine holds, by digest.
    here, kept_file = tmp_path / "s-round2-c1" / ahead[0].name, tmp_path / run / ahead[0].name
    final = next(f for f in report.facts if f.startswith("final binary"))
    assert final.startswith(f"final binary: {here} (sha256 ") and f"than the one run {run} measured and kept" in final
    # A QPS confirmation measured it last: its file.
    stored_round("s-confirm-d1", labels=(start.name, ahead[0].name), made_here=b" confirmed")
    assert best.final_binary(store, path, "s-confirm-d1").startswith(
        f"final binary: {tmp_path / 's-confirm-d1' / ahead[0].name} (sha256 ")
    here.write_bytes(b"rebuilt since")
    assert best.final_binary(store, path).startswith(f"final binary: {kept_file} (sha256 ")
    kept_file.unlink()
    assert best.final_binary(store, path).startswith(f"final binary: {here} has changed since run s-round2-c1")
    here.unlink()
    assert best.final_binary(store, path).startswith("final binary: not on this machine; run s-round2-c1 measured")
    # The start as the winner (nothing kept): the file round 1 measured it as; no run at all: said so.
    assert best.final_binary(store, best.SearchResult(start.name, 0.0, [best.Round(1, start.name, ratios, None, run)])
                             ).startswith(f"final binary: {tmp_path / run / start.name} (sha256 ")
    assert best.final_binary(store, best.SearchResult(start.name, 0.0)) == \
        f"final binary: {start.name}, which no stored run measured"
    stored_round("s-round2-c2", base=ahead[0].name, labels=(ahead[0].name, ahead[1].name))
    assert best.rebuilt_starts(store, replace(path, rounds=[path.rounds[0], replace(path.rounds[1], run="s-round2-c2")])) == ()
    # Builds compiled from --profiles files (a round finished on a machine that did not train them) are
    # this search's builds if the file's training is the search's, by digest.
    stored_round("s-round1-e1", imported=train.digest())
    stored_round("s-round1-e2", imported=parse_train("mix", 10).digest())
    assert rounds._same_builds(store.run("s-round1-e1"), set(speeds))
    assert not rounds._same_builds(store.run("s-round1-e2"), set(speeds))
    stored_round("s-round1-e3", imported=train.digest(), trained_build="rel_pgo_use_partial")   # a sibling's
    assert not rounds._same_builds(store.run("s-round1-e3"), set(speeds))


def test_the_path_gives_the_winner_against_the_start_and_each_reference_binary_in_the_qps_confirmation(tmp_path):
    """The confirmation's pairs read against each reference: a target such as '1.45x Debian's binary'
    is the winner against that binary in the blocks both ran in, with its interval."""
    from dataclasses import replace

    import pytest

    from pgolab import bench
    from pgolab.fleet import BenchTarget
    from pgolab.record import BinaryInfo, BuildRecord, SourceInfo
    from pgolab.store import Store
    from test_measures import FakeFleet, FakeInstallation
    from test_merge import OPTIONS, ShardQps

    start, winner = best.START, best.START + "_bolt"
    # The winner's QPS-only twins: its code on huge pages, pgolab's way and BOLT's.
    hugetext, hugify = best.START + "_hugetext_bolt", best.START + "_bolt_hugify"
    assert [v.name for v in best.qps_only(parse(winner))] == [hugetext, hugify]
    assert best.qps_only(parse(hugify)) == [] and [v.name for v in best.qps_only(parse(start))] == [best.START + "_hugetext"]
    speeds = {start: 1.0, winner: 1.10, "distro": 0.8, hugetext: 1.21}
    targets = []
    for label in speeds:
        binary = tmp_path / label
        binary.write_bytes(label.encode())
        installation = FakeInstallation(binary, "postgresql", "pgsql")
        description = (BinaryInfo(str(binary), "15.20", f"binary {binary}") if label == "distro" else
                       BuildRecord(label, label, "clang", "postgresql", SourceInfo(version="15.18"), {}, {},
                                   str(binary), "/i", "/l"))
        targets.append(BenchTarget(label, description.kind, installation, description))
    store = Store(tmp_path / "results.sqlite")
    bench.run_bench(store, "s-confirm", start, targets, replace(OPTIONS, modes=("qps",)), "pgolab best",
                    measures=[ShardQps(speeds)], fleet_factory=FakeFleet)
    from pgolab.stats import Estimate
    result = best.SearchResult(start, 0.0, [best.Round(1, start, {winner: Estimate(1.05, 1.01, 1.09, 10)}, winner)])
    lines = best.confirmation_lines(store, result, "s-confirm")
    assert [line.split(" in the QPS")[0] for line in lines] == [f"{winner} against {start}", f"{winner} against distro",
                                                                f"{hugetext} against {winner}"]
    ratio = {ref: float(line.split("rQPS ")[1].split()[0]) for ref, line in zip((start, "distro", winner), lines)}
    assert ratio[start] == pytest.approx(1.10, rel=0.01) and ratio["distro"] == pytest.approx(1.375, rel=0.01)
    assert ratio[winner] == pytest.approx(1.10, rel=0.01)
    assert all("rCPU " in line and "(faster)" in line for line in lines)
    report = best.stored_path_report(store, result, "postgresql 15.18", "s-confirm")
    assert lines == [f for f in report.facts if " in the QPS confirmation: " in f]
    assert best.confirmation_lines(store, result, None) == []
