"""The matrix's pure parts: which variants, in which order."""

import pytest

from pgolab import labels, matrix, variants
from pgolab.errors import PgolabError


def build_record(server: str, version: str):
    """A build record with what a run's target reads of it."""
    from pgolab.record import BuildRecord, SourceInfo
    return BuildRecord(label="x", variant="rel", description="x", server=server,
                       source=SourceInfo("/s", version), toolchain={}, flags={},
                       server_binary="/b/final/install/bin/x", install_dir="/b/final/install", logs="/b/logs")


def names(vs):
    return [v.name for v in vs]


def test_published_is_the_20_and_bolt_adds_a_twin_per_pgo_build():
    assert len(matrix.choose("published")) == 20
    with_bolt = matrix.choose("published", bolt=True)
    assert len(with_bolt) == 24
    assert {"rel_pgo_use_bolt", "rel_lto_pgo_use_clang_bolt", "rel_pgo_use_clang_bolt",
            "rel_lto_pgo_use_bolt"} <= set(names(with_bolt))


def test_all_leaves_out_the_instrumented_builds_they_are_built_on_the_way():
    chosen = matrix.choose("all")
    assert chosen and not any(v.pgo == "gen" for v in chosen)
    assert len(chosen) == len(set(chosen))


def test_a_list_of_names_is_parsed_and_a_bad_one_refused():
    assert names(matrix.choose("rel_o2nofp, rel_lto_clang_bolt")) == ["rel_o2nofp", "rel_lto_clang_bolt"]
    with pytest.raises(PgolabError, match="unknown variant"):
        matrix.choose("rel_o2nofp,rel_fast")
    with pytest.raises(PgolabError, match="no variants"):
        matrix.choose(" , ")


def test_builds_run_cheapest_first_plain_before_lto_before_pgo_before_bolt():
    order = names(matrix.build_order(matrix.choose("rel_pgo_use_bolt,rel_lto_pgo_use_clang,rel_pgo_use,"
                                                   "rel_lto,rel_o2nofp")))
    assert order == ["rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_pgo_use_bolt", "rel_lto_pgo_use_clang"]


def test_the_order_is_stable_for_equal_costs():
    chosen = [variants.parse("rel_native"), variants.parse("rel_o2nofp"), variants.parse("rel")]
    assert names(matrix.build_order(chosen)) == ["rel_native", "rel_o2nofp", "rel"]


def test_a_version_series_labels_builds_with_server_and_version(tmp_path):
    from pgolab.sources import SourceTree
    tree = SourceTree(tmp_path, "mariadb", "11.8.6")
    assert matrix.target_label(tree, "rel_o2nofp", series=True) == "mariadb-11.8.6:rel_o2nofp"
    assert matrix.target_label(tree, "rel_o2nofp", series=False) == "rel_o2nofp"
    # Every reader of a label splits it the same way (matrix, report, variants.axis_pairs).
    assert labels.split("mariadb-11.8.6:rel_o2nofp") == ("mariadb-11.8.6", "rel_o2nofp")
    assert labels.split("distro") == ("", "distro")
    assert matrix.default_run_name([tree, SourceTree(tmp_path, "mysql", "9.7.2")],
                                   matrix.BenchOptions(suite="full", modes=("qps",))) \
        == "matrix-mariadb-11.8.6-mysql-9.7.2-full-qps"


def test_mariadb_and_mysql_share_a_run_on_data_of_their_own_family():
    from pgolab import bench
    from pgolab.fleet import BenchTarget

    from pgolab.targets import INSTALLATIONS

    class Inst:   # what check_targets and data_family read, from the real recipes without their binaries
        def __init__(self, server):
            real = {cls.server: cls for cls in INSTALLATIONS}[server]
            self.server = server
            self.data_version_parts = real.data_version_parts
            self.sysbench_driver = real.sysbench_driver

    def target(label, server, version, kind="variant"):
        from pgolab.record import BinaryInfo
        description = build_record(server, version) if kind == "variant" else BinaryInfo("/d", version, "")
        return BenchTarget(label, kind, Inst(server), description)
    maria = target("a", "mariadb", "10.11.18")
    debian = target("d", "mariadb", "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu", "binary")
    maria_new = target("n", "mariadb", "11.8.6")
    mysql = target("m", "mysql", "9.7.2")
    assert maria.data_family == debian.data_family == "mariadb-10.11"
    assert maria_new.data_family == "mariadb-11.8" and mysql.data_family == "mysql-9.7"
    assert bench.check_targets("a", [maria, debian, maria_new, mysql]) == "mariadb+mysql"
    assert target("p", "postgresql", "17.11").data_family == "postgresql-17"
    with pytest.raises(PgolabError, match="PostgreSQL is benchmarked in a run of its own"):
        bench.check_targets("a", [maria, target("p", "postgresql", "15.18")])


class _NoNativeCost:
    """Cost on a CPU with AVX-512: a -march=native build cannot be measured."""
    key = "cost"

    def variant_unavailable(self, variant):
        return "-march=native enables avx512f here" if variant.native else None

    def unavailable(self, targets):
        return {}


class _Progress:
    def __init__(self):
        self.left, self.built = {}, []

    def left_out(self, variant, reason):
        self.left[variant.name] = reason

    def build_started(self, index, total, variant):
        self.built.append(variant.name)

    def build_finished(self, index, total, result, seconds):
        pass

    def bench_step(self, state):
        pass


def test_a_cost_only_matrix_builds_what_it_can_measure_and_notes_the_rest(tmp_path, monkeypatch):
    """The orchestration around real variants and a real store, with the builds and the benchmark
    faked: a -march=native variant cost mode cannot measure here is not built and the run notes it;
    a version series and replicates count their targets; a -march=native base is refused before any
    build; a stored run of that name that holds the variant keeps it."""
    from types import SimpleNamespace

    from pgolab.measurement import BenchOptions
    from pgolab.sources import SourceTree
    from pgolab.store import NOT_BUILT, Store
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(matrix, "of_modes", lambda modes: [_NoNativeCost()])

    class FakePipeline:
        def __init__(self, request, reporter, source_digest=None):
            self.name = request.name

        def run(self):
            record = SimpleNamespace(label=self.name, kind="build", installation=lambda: None)
            return SimpleNamespace(record=record, up_to_date=True)

        def keep_bolt_profile(self):
            return None

    benched = []
    monkeypatch.setattr(matrix, "Pipeline", FakePipeline)
    monkeypatch.setattr(matrix, "_log_timing", lambda run_name, result: tmp_path / "timing")
    store = Store(tmp_path / "s.sqlite")
    run_id = store.create_or_resume_run("held", server="postgresql", base="rel_o2nofp", suite="quick",
                                        options=BenchOptions(), host=matrix.Host.this(), identity={}, command="x")[0]

    def fake_bench(store_, run_name, base, targets, options, command, on_step, notes=()):
        benched.append(([t.label for t in targets], list(notes)))
        return run_id

    monkeypatch.setattr(matrix.bench, "run_bench", fake_bench)
    tree = SourceTree(tmp_path, "postgresql", "15.18")
    TRAIN = parse_train("mix", 10)
    cost = BenchOptions(suite="quick", modes=("cost",))
    request = matrix.MatrixRequest(sources=[tree], variants=[variants.parse(n) for n in ("rel_o2nofp_native", "rel_lto")],
                                   base="rel_o2nofp", train=TRAIN, options=cost, run_name="m-{binaries}")
    progress = _Progress()
    result = matrix.run_matrix(request, store, progress, "test")
    assert progress.built == ["rel_o2nofp", "rel_lto"] and set(progress.left) == {"rel_o2nofp_native"}
    assert result.left_out == {"rel_o2nofp_native": "cost: -march=native enables avx512f here"}
    labels_, notes = benched[-1]
    assert labels_ == ["rel_o2nofp", "rel_lto"]
    assert len(notes) == 1 and notes[0].startswith(f"{NOT_BUILT}rel_o2nofp_native, which no measure of this run")
    # The base against its own second replicate is something to compare; the base alone is not.
    only_native = matrix.MatrixRequest(sources=[tree], variants=[variants.parse("rel_o2nofp_native")],
                                       base="rel_o2nofp", train=TRAIN, options=cost, run_name="r-{binaries}")
    from dataclasses import replace
    matrix.run_matrix(replace(only_native, replicates=2), store, _Progress(), "test")
    assert benched[-1][0] == ["rel_o2nofp", "rel_o2nofp+r2"]
    with pytest.raises(PgolabError, match="cost of rel_o2nofp_native: .*; nothing left to compare in cost mode"):
        matrix.run_matrix(only_native, store, _Progress(), "test")
    with pytest.raises(PgolabError, match="cost cannot measure the base rel_o2nofp_native here") as refused:
        matrix.run_matrix(replace(only_native, base="rel_o2nofp_native"), store, progress := _Progress(), "test")
    assert progress.built == [] and "another --base" in refused.value.hint
    # A run stored under this very name with the variant among its targets: it is built again.
    store.add_target(run_id, "rel_o2nofp_native", "binary", "/x", "d" * 64, build_record("postgresql", "15.18"))
    progress = _Progress()
    matrix.run_matrix(replace(only_native, run_name="held", variants=[*only_native.variants, variants.parse("rel_lto")]),
                      store, progress, "test")
    assert sorted(progress.built) == ["rel_lto", "rel_o2nofp", "rel_o2nofp_native"] and progress.left == {}
