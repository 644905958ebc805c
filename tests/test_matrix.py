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
