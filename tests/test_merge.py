"""A matrix in shards (issue 30): the assignment is deterministic and balanced, every shard measures
the base, and merge makes one run or refuses with the reason (fake measures: pure logic on the real
store, scheduler and report)."""

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from pgolab import bench, elf, matrix, merge, report, runfile
from pgolab.errors import PgolabError
from pgolab.fleet import BenchTarget
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample
from pgolab.measures.qps import QpsMeasure
from pgolab.record import BinaryInfo, BuildRecord, SourceInfo
from pgolab.sources import SourceTree, file_digest
from pgolab.store import Store
from pgolab.toolchains import compiler_family
from pgolab.variants import parse

from test_measures import FakeExecutor, FakeFleet, FakeInstallation
from test_runfile import FakeCost, FakeCostExecutor
from thinlto import link_thinlto

OPTIONS = BenchOptions(suite="quick", modes=("cost",), cost_write_repeats=2)


def test_shards_cover_the_matrix_once_balanced_and_the_same_everywhere():
    rest = [v for v in matrix.choose("published") if v.name != "rel_o2nofp"]
    shards = [matrix.shard_of(rest, k, 3) for k in (1, 2, 3)]
    assert sorted(v.name for s in shards for v in s) == sorted(v.name for v in rest)
    loads = [sum(map(matrix.group_cost, matrix.training_groups(s))) for s in shards]
    assert max(loads) - min(loads) <= max(map(matrix.group_cost, matrix.training_groups(rest)))
    # Whatever order the variants come in (another machine, another --variants spelling).
    assert [sorted(v.name for v in s) for s in shards] == \
        [sorted(v.name for v in matrix.shard_of(list(reversed(rest)), k, 3)) for k in (1, 2, 3)]
    pgo = matrix.choose("rel_pgo_use,rel_lto", bolt=True)
    assert [{v.name for v in matrix.shard_of(pgo, k, 2)} for k in (1, 2)] == \
        [{"rel_pgo_use", "rel_pgo_use_bolt"}, {"rel_lto"}], "a PGO build and its _bolt twin share one training"
    # A twin beside its profile source compiles with that training's profile: it pays its compile
    # (a plain build, and clang's extra) and BOLT's own training (0.4), no second instrumented build
    # or training.
    for name in ("rel_pgo_use", "rel_pgo_use_cs_clang"):
        source = parse(name)
        twin = replace(source, bolt=True)
        assert twin.profile_twin() == source
        extra = compiler_family(source.compiler).extra_build_cost
        assert matrix.group_cost([source, twin]) == pytest.approx(matrix.relative_cost(source) + 1.0 + extra + 0.4)
        assert matrix.group_cost([twin]) == matrix.relative_cost(twin)
    # A build that trains a profile of its own from the same instrumented build pays the training
    # (0.2), not the instrumented build again.
    partial = parse("rel_pgo_use_partial")
    assert partial.instrumented() == parse("rel_pgo_use").instrumented()
    assert matrix.group_cost([parse("rel_pgo_use"), partial]) == \
        pytest.approx(matrix.relative_cost(parse("rel_pgo_use")) + 1.0 + 0.2)
    with pytest.raises(PgolabError, match="K/N"):
        matrix.parse_shard("4/3")


SPEEDS = {"base": 1.0, "lto": 1.1, "pgo": 1.4}


class ShardExecutor(FakeCostExecutor):
    def __init__(self, speeds):
        super().__init__()
        self.speeds = speeds

    def measure(self, micro, step):
        cycles = 1e6 / self.speeds[step.label]
        return Sample(step, {"cycles": cycles, "instructions": cycles / 2, "i1_misses": 10.0, "d1_misses": 5.0,
                             "ll_misses": 1.0, "mispredicts": 3.0}, 0.0, detail={"method": "fake"})


class ShardCost(FakeCost):
    def __init__(self, speeds):
        super().__init__()
        self.speeds = speeds

    def executor(self, fleet, options, labels):
        return ShardExecutor(self.speeds)


class ShardQpsExecutor(FakeExecutor):
    """QPS of 1000 × the label's speed, times the machine's own pace, with 1 % noise."""
    def __init__(self, fleet, options, labels, speeds, pace):
        super().__init__(fleet, options, labels)
        self.speeds, self.pace = speeds, pace

    def measure(self, micro, step):
        qps = 1000 * self.pace * self.speeds[step.label] * self.random.gauss(1, 0.01)
        return Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, 0.0)


class ShardQps(QpsMeasure):
    def __init__(self, speeds, pace=1.0, seed=7):
        self.speeds, self.pace, self.seed = speeds, pace, seed

    def executor(self, fleet, options, labels):
        executor = ShardQpsExecutor(fleet, options, labels, self.speeds, self.pace)
        executor.random = random.Random(self.seed)      # each machine's noise of its own
        return executor


def shard_run(tmp_path: Path, store: Store, name: str, labels: list[str], binaries: dict[str, bytes],
              speeds=SPEEDS, options=OPTIONS, measures=None, avx512: tuple[str, ...] = (),
              built: tuple[str, ...] = (), notes: list[str] = ()) -> None:
    """One shard's run of fake binaries; the `avx512` labels are -march=native builds that turned
    AVX-512 on, which cost mode leaves out; the `built` ones carry the build record pgolab writes of
    their file (its sha256 and the sha256 of what it runs)."""
    targets = []
    for label in labels:
        binary = tmp_path / name / label
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_bytes(binaries.get(label, label.encode()))
        if label in built:
            record = BuildRecord(label, label, "clang", "postgresql", SourceInfo(), {}, {}, str(binary), "/i", "/l",
                                 binary_digest=file_digest(binary), code_digest=elf.loaded_digest(binary))
            targets.append(BenchTarget(label, BuildRecord.kind, FakeInstallation(binary), record))
        elif label in avx512:
            record = BuildRecord(label, label, "native", "postgresql", SourceInfo(), {}, {}, str(binary), "/i", "/l",
                                 native_avx512=["avx512f"])
            targets.append(BenchTarget(label, BuildRecord.kind, FakeInstallation(binary), record))
        else:
            targets.append(BenchTarget(label, "binary", FakeInstallation(binary), BinaryInfo(str(binary), "", label)))
    bench.run_bench(store, name, "base", targets, options, f"pgolab matrix --shard ({name})",
                    measures=measures or [ShardCost(speeds)], fleet_factory=FakeFleet, notes=notes)


class NoNativeCost(FakeCost):
    """Cost on a CPU with AVX-512: no -march=native build can be measured."""
    def variant_unavailable(self, variant):
        return "-march=native enables avx512f here" if variant.native else None


class NoBuild:
    """A matrix progress that fails the test if a build starts."""
    def __init__(self):
        self.left = {}

    def left_out(self, variant, reason):
        self.left[variant.name] = reason

    def build_started(self, index, total, variant):
        raise AssertionError(f"{variant.name} was built")


def test_a_matrix_builds_no_variant_its_measures_cannot_measure_here(tmp_path, monkeypatch):
    """A shard of -march=native builds in a cost-only run on a CPU with AVX-512 (the PostgreSQL matrix's
    shard 6 of 6): they are left out before anything is built, the one-line refusal says why and what
    to do; with QPS asked too, they are built."""
    monkeypatch.setattr(matrix, "of_modes", lambda modes: [NoNativeCost() if m == "cost" else ShardQps(SPEEDS)
                                                          for m in modes])
    chosen = [parse(n) for n in ("rel_o2nofp", "rel_o2nofp_native", "rel_native_lto", "rel_lto")]
    cost_only = BenchOptions(suite="quick", modes=("cost",))
    assert matrix.unmeasurable_here(chosen, "rel_o2nofp", cost_only) == {
        "rel_o2nofp_native": "cost: -march=native enables avx512f here",
        "rel_native_lto": "cost: -march=native enables avx512f here"}
    assert matrix.unmeasurable_here(chosen, "rel_o2nofp", replace(cost_only, modes=("qps", "cost"))) == {}
    assert matrix.unmeasurable_here(chosen, "rel_o2nofp_native", cost_only).keys() == {"rel_native_lto"}, \
        "the base is never left out: the run refuses a base it cannot measure"
    progress = NoBuild()
    request = matrix.MatrixRequest(sources=[SourceTree(tmp_path, "postgresql", "15.18")],
                                   variants=[parse("rel_o2nofp_native"), parse("rel_native_lto")],
                                   base="rel_o2nofp", train=None, options=cost_only, run_name="native")
    with pytest.raises(PgolabError, match="cost of rel_o2nofp_native: -march=native enables avx512f here; nothing "
                                          "left to compare in cost mode") as refused:
        matrix.run_matrix(request, Store(tmp_path / "s.sqlite"), progress, "test")
    assert "CPU without AVX-512" in refused.value.hint
    assert progress.left == {}, "refused before anything is said left out or built"


def test_what_a_shard_did_not_build_is_said_in_the_merged_run_unless_another_shard_measured_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    note = "not built: rel_native, which no measure of this run can measure on Some CPU (cost: avx512f here)"
    shard_run(tmp_path, store, "a", ["base", "lto"], {}, notes=[note])
    shard_run(tmp_path, store, "b", ["base", "pgo"], {})
    assert note in report.compute(store, "a").facts
    merged = merge.merge(store, ["a", "b"], "m", "test")
    assert f"{note} (shard a)" in report.compute(store, merged.run_id).facts
    assert sum("not built" in f for f in report.compute(store, merged.run_id).facts) == 1
    # A fill run on a CPU without AVX-512 measured it: the merge no longer says it was not built.
    shard_run(tmp_path, store, "native", ["base", "rel_native", "rel_native_lto"], {},
              speeds={**SPEEDS, "rel_native": 1.1, "rel_native_lto": 1.15})
    filled = merge.merge(store, ["a", "b"], "m2", "test", fill=["native"])
    facts = report.compute(store, filled.run_id).facts
    assert not any("not built" in f for f in facts), facts
    # A note of a label nobody measured stays, also where its name contains measured labels; so
    # does one of replicates the fill run did not make.
    other = "not built: rel_native_lto_clang, which no measure of this run can measure on Some CPU (cost: avx512f here)"
    twice = "not built: rel_native, rel_native+r2, which no measure of this run can measure on Some CPU (cost: ...)"
    shard_run(tmp_path, store, "c", ["base", "pgo"], {}, notes=[other, twice])
    kept = merge.merge(store, ["a", "c"], "m3", "test", fill=["native"])
    assert [f for f in report.compute(store, kept.run_id).facts if "not built" in f] == [
        f"{other} (shard c)", f"{twice} (shard c)"]
    # The same merge made again once its shards hold more: its notes are made anew, not added to.
    from pgolab.store import NOT_BUILT
    rows = merge.merged_rows(merge.load(store, ["a", "b"], 2), "m", "test")
    assert any(c.startswith(NOT_BUILT) for c in json.loads(rows["run"]["commands"]))
    rows["run"]["commands"] = json.dumps([c for c in json.loads(rows["run"]["commands"]) if not c.startswith(NOT_BUILT)])
    assert store.add_rows(rows)[0] == merged.run_id
    assert not any("not built" in f for f in report.compute(store, merged.run_id).facts)


def test_axis_twins_in_two_shards_are_read_through_each_shards_base(tmp_path, monkeypatch):
    """rel and rel_lto fell in different shards: the merged run has no block where both ran, so LTO's
    effect is each test's ratio to its own shard's base, one less the other. In cost mode it is the
    true 1.05 with the bound counted twice (wider than the same pair measured in one shard); on the
    clock, each shard with noise of its own, near 1.05 with a wider interval than within one shard."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    speeds = {"base": 1.0, "rel": 1.1, "rel_lto": 1.155}
    options = BenchOptions(suite="quick", modes=("qps", "cost"), instances=3, blocks=2, cost_write_repeats=2)
    store = Store(tmp_path / "s.sqlite")
    for seed, (name, labels) in enumerate((("a", ["base", "rel"]), ("b", ["base", "rel_lto"]),
                                           ("one", ["base", "rel", "rel_lto"]))):
        shard_run(tmp_path, store, name, labels, {}, speeds=speeds, options=options,
                  measures=[ShardQps(speeds, seed=seed), ShardCost(speeds)])
    merged = report.compute(store, merge.merge(store, ["a", "b"], "m", "test").run_id)
    alone = report.compute(store, "one")
    row = next(r for r in merged.table("axes").rows if r["build"] == "rel_lto")
    same = next(r for r in alone.table("axes").rows if r["build"] == "rel_lto")
    assert row["against"] == "rel" and row["cycles"].value == pytest.approx(1.05)
    assert same["cycles"].value == pytest.approx(1.05)
    assert row["cycles"].half_width == pytest.approx(same["cycles"].half_width * 2 ** 0.5, rel=0.05)
    assert row["qps"].low < 1.05 < row["qps"].high and row["qps"].value == pytest.approx(1.05, rel=0.02)
    assert row["qps"].half_width > same["qps"].half_width, "two shards' noise, not one block's"
    assert "Measured in different shards, so read through each shard's own base" in merged.table("axes").note
    assert "the ±0.5% bound of cost is ±0.7% there" in merged.table("axes").note
    assert "rel_lto against rel" in merged.table("axes").note
    assert "different shards" not in (alone.table("axes").note or "")
    # rel measured in two shards: pairing one rel_lto observation with either would count it twice.
    shard_run(tmp_path, store, "c", ["base", "rel"], {}, speeds=speeds, options=options,
              measures=[ShardQps(speeds, seed=5), ShardCost(speeds)])
    three = report.compute(store, merge.merge(store, ["a", "b", "c"], "m3", "test").run_id)
    assert next(r for r in three.table("axes").rows if r["build"] == "rel_lto")["cycles"] is None


def test_a_shard_that_measured_no_cost_of_another_base_binary_is_no_anchor(tmp_path, monkeypatch):
    """A shard whose only build cost mode could not measure (-march=native with AVX-512) measures QPS
    alone; if its base is another binary, nothing shows the anchor held, and the merge refuses it."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    options = BenchOptions(suite="quick", modes=("qps", "cost"), instances=2, blocks=2, cost_write_repeats=2)
    speeds = {**SPEEDS, "native": 1.05}
    store = Store(tmp_path / "s.sqlite")
    measures = [ShardQps(speeds), ShardCost(speeds)]
    shard_run(tmp_path, store, "a", ["base", "lto"], {}, speeds=speeds, options=options, measures=measures)
    shard_run(tmp_path, store, "same", ["base", "native"], {}, speeds=speeds, options=options, measures=measures,
              avx512=("native",))
    assert {s.step.mode for s in store.samples(store.run("same").id)} == {"qps"}
    assert merge.merge(store, ["a", "same"], "m", "test").run_id, "one base binary: the anchor holds"
    shard_run(tmp_path, store, "other", ["base", "native"], {"base": b"rebuilt elsewhere"}, speeds=speeds,
              options=options, measures=measures, avx512=("native",))
    with pytest.raises(PgolabError, match="other measured its cost in no test a did"):
        merge.merge(store, ["a", "other"], "m2", "test")


def test_merged_shards_read_every_build_against_its_own_shard_base(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    one, two = Store(tmp_path / "one.sqlite"), Store(tmp_path / "two.sqlite")
    shard_run(tmp_path, one, "shard1", ["base", "lto"], {})
    shard_run(tmp_path, two, "shard2", ["base", "pgo"], {})
    runfile.export_run(two, "shard2", tmp_path / "shard2.run.gz")       # from the other machine
    run_id = merge.merge(one, ["shard1", str(tmp_path / "shard2.run.gz")], "merged", "pgolab merge (test)").run_id
    builds = {r["build"]: r["cycles"].value for r in report.compute(one, run_id).table("builds").rows}
    assert builds == pytest.approx({"lto": 1.1, "pgo": 1.4})
    instances = {s.step.instance for s in one.samples(run_id)}
    assert instances == {101, 201}
    count = one.sample_count(run_id)
    again = merge.merge(one, ["shard1", str(tmp_path / "shard2.run.gz")], "merged", "pgolab merge (test)").run_id
    assert (again, one.sample_count(run_id)) == (run_id, count), "merging twice adds nothing"


def test_merge_refuses_shards_that_are_not_one_experiment(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    shard_run(tmp_path, store, "a", ["base", "lto"], {})
    # Another suite.
    shard_run(tmp_path, store, "full", ["base", "pgo"], {}, options=BenchOptions(suite="full", modes=("cost",)))
    with pytest.raises(PgolabError, match="another experiment.*suite"):
        merge.merge(store, ["a", "full"], "m1", "test")
    # A base that is another binary and costs 5 % more.
    shard_run(tmp_path, store, "moved", ["base", "pgo"], {"base": b"another build"}, speeds={**SPEEDS, "base": 0.95})
    with pytest.raises(PgolabError, match="base base of moved is another binary.*costs more than"):
        merge.merge(store, ["a", "moved"], "m2", "test")
    # Another binary that costs the same: one anchor.
    shard_run(tmp_path, store, "rebuilt", ["base", "pgo"], {"base": b"rebuilt elsewhere"})
    assert merge.merge(store, ["a", "rebuilt"], "m3", "test").run_id
    # Other shards under that name: another merge, refused with what to do.
    shard_run(tmp_path, store, "third", ["base", "pgo"], {})
    with pytest.raises(PgolabError, match="run 'm3' exists with another identity: merged_from differ") as refused:
        merge.merge(store, ["a", "rebuilt", "third"], "m3", "test")
    assert "name it otherwise (merge --name" in refused.value.hint
    # One label, two binaries.
    shard_run(tmp_path, store, "twice", ["base", "lto"], {"lto": b"another lto"})
    with pytest.raises(PgolabError, match="lto was measured in 2 shards and is not shown to be one binary"):
        merge.merge(store, ["a", "twice"], "m4", "test")
    with pytest.raises(PgolabError, match="2 shards or more"):
        merge.merge(store, ["a"], "m5", "test")


def test_a_clang_thinlto_build_of_one_tree_at_two_paths_is_one_binary_in_a_merge(tmp_path, monkeypatch):
    """Shards that built one tree at two paths with clang ThinLTO (real clang-16 links): the files differ
    in symbol names, what they run does not, so the base is one anchor whatever it costs in each shard,
    and the build is one label; the merged run says so, and so does the run of each CPU model's clock
    figures where that model's shards hold both files. Another code under the label is refused, naming
    each shard's file and code digest."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    one, two, other = (link_thinlto(tmp_path / "one"), link_thinlto(tmp_path / "two" / "deeper"),
                       link_thinlto(tmp_path / "three", factor=9))
    assert one.read_bytes() != two.read_bytes()
    store = Store(tmp_path / "s.sqlite")
    options = BenchOptions(suite="quick", modes=("qps", "cost"), instances=2, blocks=2, cost_write_repeats=2)
    here = Host.this()
    # The base costs 5 % more in b: were it not one binary by its code, the anchor check would refuse it.
    for name, family, prog, base_speed in (("a", "family 25, model 1", one, 1.0), ("b", "family 25, model 1", two, 0.95),
                                           ("c", "family 6, model 167", one, 1.0)):
        monkeypatch.setattr(Host, "this", classmethod(lambda cls, f=family: replace(here, cpu="Some CPU", cpu_id=f"cpu {f}, stepping 1")))
        speeds = {**SPEEDS, "base": base_speed}
        shard_run(tmp_path, store, name, ["base", "lto"], {"base": prog.read_bytes(), "lto": prog.read_bytes()},
                  options=options, measures=[ShardQps(speeds), ShardCost(speeds)], built=("base", "lto"))
    merged = merge.merge(store, ["a", "b", "c"], "m", "test")
    code = elf.loaded_digest(one)[:12]
    notes = store.run("m").commands
    assert any(n.startswith(f"the base base: loaded sha256 {code}") and "differ by up to 5.3% between shards" in n
               for n in notes)
    assert any(n.startswith(f"lto: loaded sha256 {code}") for n in notes)
    assert {t.binary_digest for t in store.targets(merged.run_id)} == {file_digest(one)}
    amd = store.run(merged.per_cpu["Some CPU (family 25, model 1)"]).commands
    assert any(n.startswith(f"the base base: loaded sha256 {code}") for n in amd)
    assert any(n.startswith(f"lto: loaded sha256 {code}") for n in amd)
    intel = store.run(merged.per_cpu["Some CPU (family 6, model 167)"]).commands
    assert not any("loaded sha256" in n for n in intel), "one shard, one file: nothing to note"
    shard_run(tmp_path, store, "d", ["base", "lto"], {"base": one.read_bytes(), "lto": other.read_bytes()},
              options=options, measures=[ShardQps(SPEEDS), ShardCost(SPEEDS)], built=("base", "lto"))
    with pytest.raises(PgolabError, match=rf"lto was measured in 2 shards and is not shown to be one binary "
                                          rf"\(a: {file_digest(one)[:12]} \(loaded {code}\), "
                                          rf"d: {file_digest(other)[:12]} \(loaded "):
        merge.merge(store, ["a", "d"], "m2", "test")


def test_a_label_without_a_digest_merges_from_one_shard_and_not_from_two(tmp_path, monkeypatch):
    """A store from before digests were kept: a label one shard measured needs no comparison; the
    same label in two shards is not shown to be one binary; the base is one anchor by its cost."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    shard_run(tmp_path, store, "a", ["base", "lto"], {})
    shard_run(tmp_path, store, "b", ["base", "pgo"], {})
    shard_run(tmp_path, store, "c", ["base", "lto"], {})
    store.db.execute("UPDATE targets SET binary_digest = ''")
    store.db.commit()
    merged = merge.merge(store, ["a", "b"], "m", "test")
    assert any(n.startswith("the base base is not shown to be one binary (a: no digest, b: no digest) and costs the "
                            "same within ±1.5% in every test") for n in store.run("m").commands)
    assert {r["build"] for r in report.compute(store, merged.run_id).table("builds").rows} == {"lto", "pgo"}
    with pytest.raises(PgolabError, match=r"lto was measured in 2 shards and is not shown to be one binary "
                                          r"\(a: no digest, c: no digest\)"):
        merge.merge(store, ["a", "c"], "m2", "test")


def test_shards_on_two_cpu_models_merge_their_cost_and_keep_each_models_qps_apart(tmp_path, monkeypatch):
    """Three shards, two on one CPU model whose clock runs at its own pace, one on another at twice
    it: cost is merged over all three, QPS only within each model, and the report says so."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    options = BenchOptions(suite="quick", modes=("qps", "cost"), instances=2, blocks=2, cost_write_repeats=2)
    here = Host.this()
    speeds = {**SPEEDS, "native": 1.05}
    for name, labels, family, pace in (("s1", ["base", "lto"], "family 25, model 1", 1.0),
                                       ("s2", ["base", "pgo"], "family 6, model 167", 2.0),
                                       ("s3", ["base", "native"], "family 25, model 1", 1.0)):
        monkeypatch.setattr(Host, "this", classmethod(lambda cls, f=family: replace(here, cpu="Some CPU", cpu_id=f"cpu {f}, stepping 1")))
        shard_run(tmp_path, store, name, labels, {}, options=options,
                  measures=[ShardQps(speeds, pace), ShardCost(speeds)])
    merged = merge.merge(store, ["s1", "s2", "s3"], "m", "test")
    assert set(merged.per_cpu) == {"Some CPU (family 25, model 1)", "Some CPU (family 6, model 167)"}
    whole = report.compute(store, merged.run_id)
    assert {s.step.mode for s in store.samples(merged.run_id)} == {"cost"}
    assert {r["build"]: r["cycles"].value for r in whole.table("builds").rows} == \
        pytest.approx({"lto": 1.1, "pgo": 1.4, "native": 1.05})
    facts = "\n".join(whole.facts)
    assert "on Some CPU (family 25, model 1): s1, s3; on Some CPU (family 6, model 167): s2" in facts
    assert "m@some-cpu-family-6-model-167 (Some CPU (family 6, model 167))" in facts
    assert "host of the first shard" in facts
    amd = report.compute(store, merged.per_cpu["Some CPU (family 25, model 1)"])
    assert {s.step.mode for s in store.samples(merged.per_cpu["Some CPU (family 25, model 1)"])} == {"qps"}
    assert {r["build"]: r["qps"].value for r in amd.table("builds").rows} == \
        pytest.approx({"lto": 1.1, "native": 1.05}, rel=0.02)
    intel = report.compute(store, merged.per_cpu["Some CPU (family 6, model 167)"])
    assert {r["build"]: r["qps"].value for r in intel.table("builds").rows} == pytest.approx({"pgo": 1.4}, rel=0.02)
    # Merging again adds nothing: the same three runs.
    counts = [store.sample_count(r) for r in (merged.run_id, *merged.per_cpu.values())]
    again = merge.merge(store, ["s1", "s2", "s3"], "m", "test")
    assert again == merged
    assert [store.sample_count(r) for r in (merged.run_id, *merged.per_cpu.values())] == counts
    # As the previous pgolab wrote them: shards by run name alone, each model's run too. They read
    # back (the CPU models from the shards' identities, which hold the host when QPS ran) and merging
    # again is the same merge, which records the facts.
    for run_id in (merged.run_id, *merged.per_cpu.values()):
        identity = json.loads(store.db.execute("SELECT identity FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        identity["shards"] = [shard["name"] for shard in identity["shards"]]
        store.db.execute("UPDATE runs SET identity = ? WHERE id = ?", (json.dumps(identity), run_id))
    store.db.commit()
    older = "\n".join(report.compute(store, merged.run_id).facts)
    assert "on Some CPU (family 25, model 1): s1, s3; on Some CPU (family 6, model 167): s2" in older
    assert report.compute(store, merged.run_id).table("shards").rows[0]["started"] is None
    assert merge.merge(store, ["s1", "s2", "s3"], "m", "test") == merged
    assert [store.sample_count(r) for r in (merged.run_id, *merged.per_cpu.values())] == counts
    assert report.compute(store, merged.per_cpu["Some CPU (family 6, model 167)"]).table("shards").rows[0]["started"]


def test_a_cost_only_merge_names_each_shards_cpu_model_and_an_older_merged_run_merges_again(tmp_path, monkeypatch):
    """Cost runs record no host in their identity (no wall-clock measure): the merged run still names
    each shard's CPU model, from the shard's stored host. A run merged by an older pgolab, whose
    identity held only merged_from, reads its shards by number and is the same merge."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    here = Host.this()
    for name, labels, family in (("s1", ["base", "lto"], "family 25, model 1"),
                                 ("s2", ["base", "pgo"], "family 26, model 2")):
        monkeypatch.setattr(Host, "this", classmethod(lambda cls, f=family: replace(here, cpu="Some CPU", cpu_id=f"cpu {f}, stepping 1")))
        shard_run(tmp_path, store, name, labels, {})
    merged = merge.merge(store, ["s1", "s2"], "m", "test")
    assert merged.per_cpu == {}, "no wall-clock figures to keep apart"
    facts = "\n".join(report.compute(store, merged.run_id).facts)
    assert "merged from 2 shards: on Some CPU (family 25, model 1): s1; on Some CPU (family 26, model 2): s2" in facts
    shards = report.compute(store, merged.run_id).table("shards").rows
    assert [r["shard"] for r in shards] == ["s1", "s2"]
    assert [r["host"].split(", stepping")[0] for r in shards] == ["Some CPU (cpu family 25, model 1",
                                                                  "Some CPU (cpu family 26, model 2"]
    assert all(r["started"] <= r["last_sample"] for r in shards)
    assert [r["builds"] for r in shards] == [None, None], "binaries given by path: nothing built there"
    # The identity an older pgolab wrote: merged_from alone.
    identity = json.loads(store.db.execute("SELECT identity FROM runs WHERE id = ?", (merged.run_id,)).fetchone()[0])
    older = {"merged_from": identity["merged_from"]}
    store.db.execute("UPDATE runs SET identity = ? WHERE id = ?", (json.dumps(older), merged.run_id))
    store.db.commit()
    older_report = report.compute(store, merged.run_id)
    assert "merged from 2 shards: on not recorded (family not recorded): shard 1, shard 2" in "\n".join(older_report.facts)
    assert [r["host"] for r in older_report.table("shards").rows] == ["not recorded (family not recorded)"] * 2
    count = store.sample_count(merged.run_id)
    assert merge.merge(store, ["s1", "s2"], "m", "test").run_id == merged.run_id
    assert store.sample_count(merged.run_id) == count
    assert "on Some CPU (family 26, model 2): s2" in "\n".join(report.compute(store, merged.run_id).facts), \
        "merging again records what the older merge did not"


def test_a_shards_facts_sum_what_its_builds_cost_base_included(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    shard_run(tmp_path, store, "s1", ["base", "lto"], {})
    rows = store.rows(store.run("s1").id)
    for target, (wall, cpu) in zip(rows["targets"], [(600.0, 1080.0), (900.0, 1500.0)]):
        record = BuildRecord(target["label"], target["label"], "gcc", "postgresql", SourceInfo(), {}, {}, "/b/postgres",
                             "/i", "/l", build_seconds=wall, build_cpu_seconds=cpu)
        target.update(kind=BuildRecord.kind, description=json.dumps(record.as_dict()))
    rows["targets"].append({**rows["targets"][0], "label": "distro", "kind": "binary",
                            "description": json.dumps({"path": "/usr/sbin/x", "version": "", "description": "a server"})})
    facts = merge.shard_facts(merge.Shard("s1", rows))
    assert facts.builds == ("base", "lto") and (facts.build_wall_min, facts.build_cpu_min) == (25.0, 43.0)
    assert facts.name == "s1" and facts.started == rows["run"]["created"]
    assert facts.last_sample == max(s["created"] for s in rows["samples"])


def avx_and_other_shards(tmp_path: Path) -> tuple[Store, dict[str, float]]:
    """Two cost shards: "avx" (base, lto, and native built with AVX-512, left out of cost) and
    "other" (base, pgo)."""
    store = Store(tmp_path / "s.sqlite")
    speeds = {**SPEEDS, "native": 1.05}
    shard_run(tmp_path, store, "avx", ["base", "lto", "native"], {"native": b"native with avx-512"}, speeds=speeds,
              avx512=("native",))
    shard_run(tmp_path, store, "other", ["base", "pgo"], {}, speeds=speeds)
    return store, speeds


def test_a_label_one_shard_could_not_measure_takes_another_shards_build_of_it(tmp_path, monkeypatch):
    """-march=native on an AVX-512 CPU: that shard's cost leaves the build out. Merged alone, the
    label stays, and the report says why it has no cost; merged with a shard that measured its own
    build of it (another binary, another CPU), that one is the label's, not a second binary."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store, speeds = avx_and_other_shards(tmp_path)
    alone = report.compute(store, merge.merge(store, ["avx", "other"], "alone", "test").run_id)
    assert "cost not measured for native: built with -march=native" in "\n".join(alone.facts)
    assert {r["build"]: r["cycles"] and r["cycles"].value for r in alone.table("builds").rows} == \
        pytest.approx({"lto": 1.1, "pgo": 1.4, "native": None})
    shard_run(tmp_path, store, "plain", ["base", "native"], {"native": b"native without"}, speeds=speeds)
    both = report.compute(store, merge.merge(store, ["avx", "other", "plain"], "both", "test").run_id)
    assert {r["build"]: r["cycles"].value for r in both.table("builds").rows} == \
        pytest.approx({"lto": 1.1, "pgo": 1.4, "native": 1.05})
    assert "cost not measured" not in "\n".join(both.facts)


def test_a_fill_run_adds_only_what_the_shards_left_out(tmp_path, monkeypatch):
    """The -march=native piece on a CPU without AVX-512 measures builds some shards measured too, as
    other binaries: as a shard it is refused, as a fill it adds only the left-out label's cost."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store, speeds = avx_and_other_shards(tmp_path)
    shard_run(tmp_path, store, "piece", ["base", "lto", "native"], {"lto": b"lto built elsewhere", "native": b"n"},
              speeds={**speeds, "lto": 2.0})
    with pytest.raises(PgolabError, match="lto was measured in 2 shards and is not shown to be one binary"):
        merge.merge(store, ["avx", "other", "piece"], "as-shard", "test")
    merged = merge.merge(store, ["avx", "other"], "filled", "test", fill=["piece"])
    rows = {r["build"]: r["cycles"].value for r in report.compute(store, merged.run_id).table("builds").rows}
    assert rows == pytest.approx({"lto": 1.1, "pgo": 1.4, "native": 1.05}), "the piece's lto is not taken"
    assert merge.merge(store, ["avx", "other"], "nothing", "test", fill=["other"]).run_id, \
        "a fill that adds nothing is left out"


def test_a_label_two_cpu_models_measured_in_different_measures_is_not_two_binaries(tmp_path, monkeypatch):
    """QPS and cost on an AVX-512 CPU (native left out of cost, its QPS measured), both on another
    CPU with its own native build: the merged cost run takes the second's, each model's QPS run its
    own."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    here = Host.this()
    speeds = {**SPEEDS, "native": 1.05}
    both = BenchOptions(suite="quick", modes=("qps", "cost"), instances=2, blocks=2, cost_write_repeats=2)
    for name, labels, family, options, measures in (
            ("avx", ["base", "lto", "native"], "family 26, model 2", both, [ShardQps(speeds), ShardCost(speeds)]),
            ("plain", ["base", "native"], "family 25, model 1", both, [ShardQps(speeds), ShardCost(speeds)])):
        monkeypatch.setattr(Host, "this", classmethod(lambda cls, f=family: replace(here, cpu="Some CPU", cpu_id=f"cpu {f}, stepping 1")))
        shard_run(tmp_path, store, name, labels, {"native": name.encode()}, speeds=speeds, options=options,
                  measures=measures, avx512=("native",) if name == "avx" else ())
    merged = merge.merge(store, ["avx", "plain"], "m", "test")
    cost = {r["build"]: r["cycles"].value for r in report.compute(store, merged.run_id).table("builds").rows}
    assert cost == pytest.approx({"lto": 1.1, "native": 1.05})
    qps = report.compute(store, merged.per_cpu["Some CPU (family 26, model 2)"]).table("builds").rows
    assert {r["build"] for r in qps} == {"lto", "native"}


def test_cpu_models_that_differ_in_punctuation_get_runs_of_their_own():
    names = merge.per_cpu_names("m", ["AMD EPYC (family 25)", "AMD-EPYC family 25", "Intel Xeon"])
    assert names == {"AMD EPYC (family 25)": "m@amd-epyc-family-25", "AMD-EPYC family 25": "m@amd-epyc-family-25-2",
                     "Intel Xeon": "m@intel-xeon"}
