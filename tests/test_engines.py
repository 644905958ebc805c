"""Storage-engine plugins a build makes when asked (pgolab build --engine): the recipe's configure
option, build target and install, the build's name, and what a server with the plugin starts with.
The real plugin: Debian's in test_bench's engine test, a built one in docs/results/mariadb-10.11-workloads."""

from pathlib import Path

import pytest

from pgolab import variants
from pgolab.build import BuildRequest, Pipeline
from pgolab.errors import PgolabError
from pgolab.mix import MixOptions, MySQLMix
from pgolab.profile_file import instrumented_name
from pgolab.sources import SourceTree
from pgolab.targets import MariaDBInstallation, target_for
from pgolab.toolchains import toolchain
from pgolab.variants import FlagSet
from pgolab.workloads import TrainingSpec, parse_train


def test_a_mariadb_build_with_rocksdb_configures_builds_and_names_the_plugin(tmp_path):
    target = target_for("mariadb", ("rocksdb",))
    # pgolab's own list leaves MyRocks out; the engine's option comes last on the line (after the
    # user's --cmake-arg and Debian's line too), so it wins.
    for like_debian in (False, True):
        argv = target.configure(tmp_path / "src", tmp_path / "build", toolchain("gcc"), FlagSet([], [], {}),
                                variants.parse("rel_o2nofp"), ["-DPLUGIN_ROCKSDB=NO"], False,
                                like_distribution=like_debian)[0].argv
        assert argv[-1] == "-DPLUGIN_ROCKSDB=DYNAMIC" and "-DPLUGIN_ROCKSDB=NO" in argv
    assert "rocksdb" in target.build_targets(Path("/b"))
    assert "rocksdb" not in target_for("mariadb").build_targets(Path("/b"))
    tree = SourceTree(Path("/src"), "mariadb", "10.11.18")
    request = BuildRequest(tree, variants.parse("rel_lto_pgo_use_clang"), TrainingSpec(), engines=("rocksdb",))
    assert request.name == "rel_lto_pgo_use_clang+rocksdb"
    assert request.replicate_of(2).name == "rel_lto_pgo_use_clang+rocksdb+r2"
    # Its profile comes from an instrumented build with the plugin: an identity of its own.
    assert instrumented_name(request.variant, None, request.engines) == "rel_lto_pgo_gen_clang+rocksdb"
    # The instrumented build of the chain builds the plugin too, in a folder of its own.
    pipeline = Pipeline(request, source_digest="0" * 16)
    assert pipeline.instrumented.request.engines == ("rocksdb",)
    assert "rocksdb" in pipeline.instrumented.target.build_targets(Path("/b"))
    assert pipeline.instrumented.dir.name == "rel_lto_pgo_gen_clang+rocksdb"
    # One build whatever the spelling or repetition of --engine.
    assert BuildRequest(tree, request.variant, TrainingSpec(), engines=("RocksDB", "rocksdb")).name == request.name


@pytest.mark.parametrize("server, name", [("postgresql", "rocksdb"), ("mysql", "rocksdb"), ("mariadb", "innodb")])
def test_an_engine_the_server_builds_no_plugin_of_is_refused_with_what_it_offers(server, name):
    with pytest.raises(PgolabError, match=f"{server} builds no storage-engine plugin '{name}'") as refused:
        target_for(server, (name,))
    assert "--engine" in refused.value.hint


def test_a_server_with_the_plugin_file_loads_it_for_the_engine_and_its_training_covers_it(tmp_path):
    plugins = tmp_path / "lib" / "plugin"     # a build without --engine has no such folder
    inst = MariaDBInstallation(Path("/b/mariadbd"), Path("/b"), None, [], plugin_dir=plugins)
    assert inst.engine_options("rocksdb") == [] and inst.plugin_engines() == []
    assert not any("--plugin-dir" in a for a in inst.start_argv(tmp_path, tmp_path, []))
    plugins.mkdir(parents=True)
    (plugins / "ha_rocksdb.so").touch()
    assert inst.engine_options("rocksdb") == ["--plugin-load-add=ha_rocksdb.so"]
    assert inst.engine_options("innodb") == []
    assert f"--plugin-dir={plugins}" in inst.start_argv(tmp_path / "data", tmp_path / "run", [])
    # Every training loads it, not the mix's alone (a sysbench or a .sql training trains its code too).
    for load in ("mix", "sysbench", "none"):
        training = parse_train(load, 10).server_options(inst, tmp_path / "data")
        assert "--plugin-load-add=ha_rocksdb.so" in training and "--loose-rocksdb-unsafe-for-binlog=ON" in training
    mix = inst.training_mix(tmp_path, MixOptions(seconds=1))
    assert mix.engines == ("InnoDB", "Aria", "MyISAM", "RocksDB")
    assert ("mix_rocksdb_t", "mix_rocksdb_u") in mix.tables()
    # Debian's server is found in Debian's plugin folder, given no --plugin-dir.
    system = MariaDBInstallation.system() if Path("/usr/sbin/mariadbd").exists() else None
    if system is not None:
        assert not any(a.startswith("--plugin-dir") for a in system.start_argv(tmp_path, tmp_path, []))


def test_a_binary_given_by_path_loads_its_own_install_tree_s_plugins_and_never_debian_s(tmp_path):
    """A user's server (or an A/A copy) is not handed Debian's plugins, built for another server."""
    (tmp_path / "tree" / "bin").mkdir(parents=True)
    own = tmp_path / "tree" / "bin" / "mariadbd"
    own.touch()
    assert MariaDBInstallation.from_binary(own).plugin_dir is None
    (tmp_path / "tree" / "lib" / "plugin").mkdir(parents=True)
    assert MariaDBInstallation.from_binary(own).plugin_dir == tmp_path / "tree" / "lib" / "plugin"
    if Path("/usr/sbin/mariadbd").exists():
        assert MariaDBInstallation.from_binary(Path("/usr/sbin/mariadbd")).plugin_dir == Path("/usr/lib/mysql/plugin")


class _Cursor:
    """What the mix asks a server's cursor while it makes its tables: a server without MyRocks."""

    def __init__(self):
        self.last = ""

    def execute(self, sql):
        self.last = sql

    def fetchone(self):
        return ("NO",) if "RocksDB" in self.last else ("YES",)

    def executemany(self, sql, rows):
        pass

    def close(self):
        pass


def test_the_mix_leaves_out_a_plugin_engine_the_server_did_not_load():
    mix = MySQLMix("/nowhere.sock", MixOptions(seconds=1, rows=0), extra_engines=("RocksDB",))
    assert mix.engines[-1] == "RocksDB"
    cur = _Cursor()
    mix.create_tables(type("Conn", (), {"cursor": lambda self: cur})(), None)
    assert mix.engines == ("InnoDB", "Aria", "MyISAM")
