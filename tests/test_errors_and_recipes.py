"""Clear errors for bad input, and the commands each recipe generates."""

import json
from pathlib import Path

import pytest

from pgolab import profiles, toolchains
from pgolab.errors import PgolabError
from pgolab.targets import MySQLTarget, PostgreSQLTarget
from pgolab.targets.postgresql import copt
from pgolab.variants import flags_for, parse

from test_variants import CLANG, GCC


def test_missing_compiler_names_the_debian_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PgolabError) as err:
        toolchains.toolchain("clang")
    assert "apt-get install" in str(err.value) and "-16" in str(err.value)
    with pytest.raises(PgolabError, match="apt-get install gcc"):
        toolchains.toolchain("gcc")
    with pytest.raises(PgolabError, match=r"clang-19 not found \(needed for clang-19 variants\)") as err:
        toolchains.toolchain("clang19")
    assert "apt-get install clang-19" in err.value.hint


def test_an_axis_whose_toolchain_lacks_a_part_is_refused_naming_it(monkeypatch):
    """LLVM 19 with its compiler but without BOLT 19 or its profile runtime: the build asks for each
    part before it starts, and the refusal names that part's package."""
    from pgolab.profiles.bolt import bolt_profile
    present = {"clang-19", "clang++-19", "ld.lld-19", "llvm-ar-19", "llvm-profdata-19"}
    monkeypatch.setattr(toolchains.shutil, "which", lambda p: f"/usr/bin/{p}" if p in present else None)
    monkeypatch.setattr(toolchains.Path, "exists", lambda self: False)
    with pytest.raises(PgolabError) as err:
        toolchains.toolchain("clang19")
    assert "apt-get install libclang-rt-19-dev" in err.value.hint
    with pytest.raises(PgolabError) as err:
        bolt_profile(llvm_version="19")
    assert "llvm-bolt-19 not found" in str(err.value) and "apt-get install bolt-19" in err.value.hint


def test_every_installed_program_reports_a_version():
    """Build records and their digests carry these versions: a tool answering its version flag
    with usage text (llvm-profdata 16 did) would record that text instead."""
    import re
    programs = [t for t in toolchains.TOOLS if not t.program.startswith("/") and t.path()]
    assert programs, "no tool installed: run scripts/setup-system.sh"
    for t in programs:
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", t.version() or ""), (t.name, t.version())


def test_no_profile_written_is_an_error_not_a_silent_success(tmp_path):
    with pytest.raises(PgolabError, match="wrote no profile"):
        profiles.require_raw_profiles(tmp_path, profiles.GccProfile())
    (tmp_path / "raw-1-2.profraw").write_bytes(b"")
    with pytest.raises(PgolabError, match="wrote no profile"):   # an empty file counts as nothing
        profiles.require_raw_profiles(tmp_path, profiles.ClangProfile(None))


def test_an_unused_profile_is_an_error(tmp_path):
    build = tmp_path / "build"
    (build / "sql").mkdir(parents=True)
    (build / "sql" / "a.cc.o").write_bytes(b"x")
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "other#b.cc.gcda").write_bytes(b"x")
    gcc = profiles.GccProfile()
    with pytest.raises(PgolabError, match="did not use the profile"):
        profiles.require_used(gcc.check_used(build, profile, tmp_path / "build.log"), tmp_path / "build.log")
    (profile / "sql#a.cc.gcda").write_bytes(b"x")
    check = profiles.require_used(gcc.check_used(build, profile, tmp_path / "build.log"), tmp_path / "build.log")
    assert (check.objects, check.with_profile) == (1, 1)


@pytest.mark.slow   # compiles, runs and recompiles with real clang
def test_clang_consumption_is_read_from_the_objects(tmp_path):
    """Real clang: an object built with a profile has profile-driven sections, one without has not."""
    import subprocess
    from conftest import need
    need("clang-16")
    src = tmp_path / "f.c"
    src.write_text("int foo(int x){return x+1;}\nint bar(int x){return x*3;}\n"
                   "int main(void){int s=0;for(int i=0;i<1000;i++)s+=foo(i);return s&1;}\n")
    prof = tmp_path / "prof"
    subprocess.run(["clang-16", "-O2", f"-fprofile-generate={prof}", str(src), "-o", str(tmp_path / "f")], check=True)
    subprocess.run([str(tmp_path / "f")], env={"LLVM_PROFILE_FILE": str(prof / "r-%p.profraw")})
    merged = tmp_path / "p.profdata"
    subprocess.run(["llvm-profdata-16", "merge", "-o", str(merged), *map(str, prof.glob("*.profraw"))], check=True)
    build = tmp_path / "build"
    build.mkdir()
    for name, extra in (("used.o", [f"-fprofile-use={merged}"]), ("plain.o", []),
                        ("lto-used.o", ["-flto=thin", f"-fprofile-use={merged}"]), ("lto-plain.o", ["-flto=thin"])):
        subprocess.run(["clang-16", "-O2", *extra, "-c", str(src), "-o", str(build / name)], check=True)
    assert profiles.clang_object_used_profile(build / "used.o")
    assert profiles.clang_object_used_profile(build / "lto-used.o")
    assert not profiles.clang_object_used_profile(build / "plain.o")
    assert not profiles.clang_object_used_profile(build / "lto-plain.o")
    check = profiles.ClangProfile(None).check_used(build, prof, tmp_path / "none.log")
    assert (check.objects, check.with_profile) == (4, 2)


def test_runtime_profile_paths_are_absolute_and_per_process(tmp_path):
    env = profiles.ClangProfile(None).redirect_env(Path("/compiled"), tmp_path)
    assert env["LLVM_PROFILE_FILE"].startswith(str(tmp_path)) and "%p" in env["LLVM_PROFILE_FILE"]
    assert "%m" in env["LLVM_PROFILE_FILE"]
    with pytest.raises(PgolabError):
        profiles.ClangProfile(None).redirect_env(Path("/compiled"), Path("relative"))


def make_mysql_tree(root: Path) -> Path:
    (root / "sql").mkdir(parents=True)
    (root / "boost").mkdir()
    (root / "MYSQL_VERSION").write_text("MYSQL_VERSION_MAJOR=8\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=40\n")
    return root


def test_mysql_uses_its_own_lto_and_fprofile_options(tmp_path):
    tree = make_mysql_tree(tmp_path / "mysql")
    target = MySQLTarget()
    profile = tmp_path / "profile"
    for name, expected, absent in [
        ("rel_lto_pgo_use", ["-DWITH_LTO=ON", "-DFPROFILE_USE=ON", f"-DFPROFILE_DIR={profile}"], "-flto"),
        ("rel_pgo_gen_clang", ["-DFPROFILE_GENERATE=ON", "-DUSE_LD_LLD=OFF", "-DWITH_LTO=OFF"],
         "-fprofile-generate"),
        # FPROFILE_USE turns MySQL's WITH_LTO default on: a PGO build without LTO says OFF.
        ("rel_pgo_use", ["-DFPROFILE_USE=ON", "-DWITH_LTO=OFF"], "-fprofile-use"),
    ]:
        variant = parse(name)
        tc = CLANG if variant.compiler == "clang" else GCC
        build = tmp_path / name
        flags = target.adapt_flags(variant, flags_for(variant, tc, profile_dir=profile, build_dir=build))
        (cmd,) = target.configure(tree, build, tc, flags, variant, [], False, profile)
        for opt in expected:
            assert opt in cmd.argv
        assert f"-DWITH_BOOST={tree / 'boost'}" in cmd.argv
        include = (build / "pgolab-flags.cmake").read_text()
        assert absent not in include, "MySQL's own option replaces pgolab's flag"
    # gcc's own PGO extras are still added by pgolab.
    gcc_use = target.adapt_flags(parse("rel_pgo_use"), flags_for(parse("rel_pgo_use"), GCC, profile_dir=profile,
                                                                 build_dir=tmp_path / "b"))
    assert "-fprofile-correction" in gcc_use.compile


def test_mysql_servers_get_no_mariadb_only_options(tmp_path):
    from pgolab.targets import MySQLInstallation
    inst = MySQLInstallation(server_binary=tmp_path / "mysqld", bin_dir=tmp_path, lc_messages_dir=None, install_db=[])
    argv = inst.start_argv(tmp_path / "data", tmp_path / "run", []) + inst.valgrind_options()
    assert not any(a.startswith("--innodb-buffer-pool-size-max") for a in argv)
    assert "--skip-networking" in argv and "--loose-mysqlx=OFF" in argv
    (init,) = inst.init_commands(tmp_path / "data", tmp_path / "tmp")
    assert "--initialize-insecure" in init.argv


def test_each_server_says_what_its_training_server_needs(tmp_path):
    """The mix's binary-log formats need binlogs on MariaDB and MySQL, nothing on PostgreSQL; a
    training without the mix needs nothing anywhere."""
    from pgolab.mix import MixOptions, MySQLMix, PostgreSQLMix
    from pgolab.targets import MySQLInstallation, PostgreSQLInstallation
    from pgolab.workloads import parse_train
    mysql = MySQLInstallation(server_binary=tmp_path / "mysqld", bin_dir=tmp_path, lc_messages_dir=None,
                              install_db=[])
    pg = PostgreSQLInstallation(bin_dir=tmp_path)
    data = tmp_path / "data"
    assert parse_train("mix", 10).server_options(mysql, data) == [f"--log-bin={data}/pgolab-binlog",
                                                                  "--server-id=1"]
    assert parse_train("mix", 10).server_options(pg, data) == []
    assert parse_train("sysbench", 10).server_options(mysql, data) == []
    mix = mysql.training_mix(tmp_path, MixOptions())
    assert isinstance(mix, MySQLMix) and mix.server == "mysql" and mix.socket == str(mysql.socket(tmp_path))
    assert isinstance(pg.training_mix(tmp_path, MixOptions()), PostgreSQLMix)
    assert pg.logs_to_stderr and not mysql.logs_to_stderr


def test_a_server_binary_is_recognised_by_its_name(tmp_path):
    from pgolab.targets import installation_for_binary
    for name, server in (("mariadbd", "mariadb"), ("mysqld", "mysql"), ("postgres", "postgresql")):
        path = tmp_path / name / "bin" / name
        path.parent.mkdir(parents=True)
        path.touch()
        installation = installation_for_binary(path)
        assert installation.server == server and installation.server_binary == path
    with pytest.raises(PgolabError, match="cannot tell which server") as e:
        installation_for_binary(tmp_path / "sqlite3")
    assert "mariadbd, mysqld, postgres" in e.value.hint


def test_postgresql_adds_flags_through_copt_and_keeps_configure_defaults(tmp_path):
    target = PostgreSQLTarget()
    rel = target.adapt_flags(parse("rel_lto"), flags_for(parse("rel_lto"), GCC))
    assert copt(rel).startswith("-O3") and "-flto=auto" in copt(rel)
    o2 = target.adapt_flags(parse("rel_o2nofp"), flags_for(parse("rel_o2nofp"), GCC))
    assert "-O3" not in copt(o2) and "-O2" in copt(o2)
    (cmd,) = target.configure(tmp_path / "src", tmp_path / "b" / "build", GCC, rel, parse("rel_lto"), [], False)
    assert not any(a.startswith("CFLAGS=") for a in cmd.argv), "configure's own CFLAGS are kept"
    assert "AR=gcc-ar" in cmd.argv
    gen = flags_for(parse("rel_pgo_gen"), GCC, profile_dir=tmp_path, build_dir=tmp_path)
    assert "enable_coverage=yes" in target.make_vars(gen, tmp_path / "b" / "build")


def test_build_records_carry_a_version_and_a_newer_one_is_refused(tmp_path):
    from pgolab.errors import PgolabError
    from pgolab.record import RECORD_VERSION, BuildRecord
    fields = {"description": "d", "server": "mariadb", "source": {"path": "/s"}, "toolchain": {}, "flags": {},
              "server_binary": "/b/final/install/bin/mariadbd", "install_dir": "/b/final/install", "logs": "/b/logs"}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"variant": "rel_o2nofp", **fields}))
    record = BuildRecord.load(old)                               # version 1 had no field: still read
    assert record.label == "rel_o2nofp" and record.dir == Path("/b")
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"variant": "rel_lto", **fields, "record_version": RECORD_VERSION + 1}))
    with pytest.raises(PgolabError, match="build record"):
        BuildRecord.load(new)


def test_a_newer_store_is_refused_with_what_to_do(tmp_path):
    import sqlite3

    from pgolab.errors import PgolabError
    from pgolab.store import STORE_VERSION, Store
    path = tmp_path / "future.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
    db.close()
    with pytest.raises(PgolabError, match="upgrade pgolab"):
        Store(path)


def test_postgresql_16_and_later_install_the_catalog_from_src_include(tmp_path):
    from pgolab.targets.postgresql import POSTGRESQL_MAKE_DIRS, install_dirs
    catalog = tmp_path / "src/include/catalog"
    catalog.mkdir(parents=True)
    (catalog / "Makefile").write_text("bki-stamp:\n\ttouch $@\n")            # PostgreSQL 15
    assert install_dirs(tmp_path) == POSTGRESQL_MAKE_DIRS
    (catalog / "Makefile").write_text("install: all\n\t$(INSTALL_DATA) postgres.bki '$(DESTDIR)$(datadir)/postgres.bki'\n")
    assert install_dirs(tmp_path) == POSTGRESQL_MAKE_DIRS + ["src/include"]


def test_builds_can_be_listed_for_one_server_and_version(tmp_path, monkeypatch):
    from typer.testing import CliRunner
    from pgolab.cli import app
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    for server, version, label in (("mariadb", "10.11.18", "rel_lto"), ("postgresql", "15.18", "rel_pgo_use")):
        folder = tmp_path / "builds" / f"{server}-{version}-0123456789" / label
        folder.mkdir(parents=True)
        (folder / "build.json").write_text(json.dumps({
            "variant": label, "description": label, "server": server, "source": {"path": "/s", "version": version},
            "toolchain": {}, "flags": {}, "server_binary": f"{folder}/final/install/bin/x",
            "install_dir": f"{folder}/final/install", "logs": f"{folder}/logs",
            "bolt": {"bolt-optimize": {"stats": {"functions": 900, "profiled": 120, "reordered": 77,
                                                 "matched_share": 1.0}}} if server == "mariadb" else None}))
    both = CliRunner().invoke(app, ["builds", "--markdown"])
    assert "rel_lto" in both.output and "rel_pgo_use" in both.output
    # BOLT's own statistics in a column of their own; a build without BOLT says so with a dash.
    header, rule, *rows = both.output.splitlines()
    bolt = header.split(" | ").index("BOLT")
    assert rule == "|" + "---|" * len(header.split(" | "))
    assert {r.split(" | ")[0].strip("| "): r.split(" | ")[bolt] for r in rows} == {
        "rel_lto": "77 functions re-laid out, 120 profiled of 900, 100% matched", "rel_pgo_use": "-"}
    pg = CliRunner().invoke(app, ["builds", "--markdown", "--server", "postgresql-15"])
    assert pg.exit_code == 0 and "rel_pgo_use" in pg.output and "rel_lto" not in pg.output


def test_a_context_sensitive_build_chains_two_instrumented_builds(tmp_path, monkeypatch):
    """`_cs`: the build trains a _pgo_csgen build (compiled with the first profile and instrumented
    again), which trains the _pgo_gen build every clang PGO build of those axes shares."""
    from types import SimpleNamespace
    from pgolab.build import BuildRequest, Pipeline
    from pgolab.sources import SourceTree
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    tree = SourceTree(tmp_path / "src", "postgresql", "15.18")

    def pipeline(label=None):
        request = BuildRequest(tree, parse("rel_lto_pgo_use_cs_clang"), parse_train("mix", 10), label=label)
        return Pipeline(request, source_digest="0" * 64)

    p = pipeline()
    csgen, gen = p.instrumented, p.instrumented.instrumented
    assert (csgen.variant.name, gen.variant.name) == ("rel_lto_pgo_csgen_clang", "rel_lto_pgo_gen_clang")
    assert gen.instrumented is None and csgen.dir.parent == gen.dir.parent == p.dir.parent
    assert [ph.name for ph in p.plan()] == ["train", "merge", "configure", "build", "install", "check-profile",
                                            "smoke"]
    assert "context-sensitive instrumented" in next(ph.description for ph in csgen.plan() if ph.name == "configure")
    # The csgen build reads its own (first) profile and writes context-sensitive counters.
    flags = p.stage_flags("gen")[1].compile
    assert f"-fprofile-use={csgen.profile_dir}/default.profdata" in flags
    assert any(f.startswith("-fcs-profile-generate=") for f in flags)
    assert f"-fprofile-use={p.profile_dir}/default.profdata" in p.stage_flags("final")[1].compile
    # A labelled training gets its own csgen build; the gen build stays shared.
    labelled = pipeline("noselect")
    assert labelled.instrumented.dir.name == "noselect-rel_lto_pgo_csgen_clang"
    assert labelled.instrumented.instrumented.dir == gen.dir
    # The record names the chain's phases after each build's role.
    for stage, name in ((p, "merge"), (csgen, "train"), (gen, "build")):
        stage.state = SimpleNamespace(phases={name: {"seconds": 1}})
    assert list(p.all_phases()) == ["csgen-gen-build", "csgen-train", "merge"]


def test_a_bolt_pgo_build_compiles_with_its_twins_profile(tmp_path, monkeypatch):
    """A `_bolt` PGO build reads the profile its twin (the build without `_bolt`) was compiled with, so
    the two differ in BOLT's layout alone: it has no training of its own and shares the instrumented build."""
    from types import SimpleNamespace
    from pgolab.build import BuildRequest, Pipeline
    from pgolab.sources import SourceTree
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    tree = SourceTree(tmp_path / "src", "postgresql", "15.18")

    def pipeline(variant, label=None):
        return Pipeline(BuildRequest(tree, parse(variant), parse_train("mix", 10), label=label), source_digest="0" * 64)

    p, twin = pipeline("rel_pgo_use_bolt"), pipeline("rel_pgo_use")
    assert p.profile_twin.dir == twin.dir and p.profile_owner is p.profile_twin
    assert p.profile_dir == twin.profile_dir and p.instrumented.dir == twin.instrumented.dir
    assert p.dir != twin.dir
    assert [ph.name for ph in p.plan()] == ["configure", "build", "install", "check-profile", "bolt-instrument",
                                            "bolt-train", "bolt-merge", "bolt-optimize", "smoke"]
    assert [ph.name for ph in twin.plan()][:2] == ["train", "merge"]
    assert f"-fprofile-use={twin.profile_dir}" in p.stage_flags("final")[1].compile
    assert "-Wl,--emit-relocs" in p.stage_flags("final")[1].link
    # A labelled training keeps its twin beside it; the instrumented build stays shared.
    labelled = pipeline("rel_pgo_use_bolt", "sysbench")
    assert labelled.profile_twin.dir.name == "sysbench-rel_pgo_use"
    assert labelled.instrumented.dir == twin.instrumented.dir

    # The record carries the twin's phases that made the profile, not the rest of the twin's build.
    p.state = SimpleNamespace(phases={"build": {"seconds": 1}, "bolt-optimize": {"seconds": 1}})
    p.profile_twin.state = SimpleNamespace(phases={n: {"seconds": 1} for n in ("train", "merge", "build", "smoke")})
    p.instrumented.state = SimpleNamespace(phases={"build": {"seconds": 1}})
    assert list(p.all_phases()) == ["gen-build", "train", "merge", "build", "bolt-optimize"]
    # Without PGO there is no twin to read from: BOLT's own training is all.
    plain = pipeline("rel_o2nofp_bolt")
    assert plain.profile_twin is None and plain.profile_owner is plain and plain.instrumented is None

def test_a_bolt_pgo_build_given_a_profile_file_has_its_twin_import_it(tmp_path, monkeypatch):
    """`build --variant rel_pgo_use_bolt --profile FILE`: the twin imports the file (no instrumented
    build, no training) and the _bolt build compiles with it, as with a trained twin."""
    from pgolab.build import BuildRequest, Pipeline
    from pgolab.sources import SourceTree
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    (tmp_path / "src").mkdir()
    tree = SourceTree(tmp_path / "src", "postgresql", "15.18")
    request = BuildRequest(tree, parse("rel_pgo_use_bolt"), parse_train("mix", 10), profile_file=tmp_path / "p.tgz")
    p = Pipeline(request, source_digest="0" * 64)
    assert p.instrumented is None and p.profile_twin.instrumented is None
    assert [ph.name for ph in p.plan()][:4] == ["configure", "build", "install", "check-profile"]
    assert [ph.name for ph in p.profile_twin.plan()][0] == "profile-import"
    assert p.pgo_context().retrain_from == p.profile_twin.pgo_context().retrain_from == "profile-import"



def test_a_folder_of_profiles_gives_a_bolt_build_its_twins_file_until_the_twin_trains_here(tmp_path, monkeypatch):
    """matrix --profiles: the file the twin's training made (by digest) is given to the _bolt build,
    whose twin imports it; another training's build, or a sibling training of its own, gets none;
    once this machine has begun the twin's training, that training goes on and no file is given,
    but a training of another spec begun there does not count."""
    from dataclasses import replace

    from pgolab import profile_file
    from pgolab.build import BuildRequest, Pipeline, with_profile_from
    from pgolab.sources import SourceTree
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    (tmp_path / "src").mkdir()
    tree = SourceTree(tmp_path / "src", "postgresql", "15.18")
    request = BuildRequest(tree, parse("rel_pgo_use_bolt"), parse_train("mix", 10))
    twin = Pipeline(request).profile_owner
    assert twin.variant.name == "rel_pgo_use"
    expected = twin.expected_profile()
    assert expected.trained_build == "rel_pgo_use" == Pipeline(request).expected_profile().trained_build
    counts = tmp_path / "trained" / "a.gcda"
    counts.parent.mkdir()
    counts.write_bytes(b"\x01\x02")
    folder = tmp_path / "profiles"
    made = folder / f"made{profile_file.SUFFIX}"
    profile_file.write(made, [counts], made_by="another machine", server=expected.server,
                       source_digest=expected.source_digest, instrumented_variant=expected.instrumented_variant,
                       compiler=expected.compiler, source_version="15.18", training=expected.training,
                       training_digest=expected.training_digest, trained_build=expected.trained_build)
    assert expected.instrumented_variant == "rel_pgo_gen" and expected.training_digest == parse_train("mix", 10).digest()
    given = with_profile_from(request, folder)
    assert given.profile_file == made and Pipeline(given).profile_twin.plan()[0].name == "profile-import"
    assert with_profile_from(replace(request, train=parse_train("mix", 11)), folder) == replace(
        request, train=parse_train("mix", 11))
    partial = BuildRequest(tree, parse("rel_pgo_use_partial"), parse_train("mix", 10))    # its own training
    assert with_profile_from(partial, folder) == partial
    assert with_profile_from(BuildRequest(tree, parse("rel_o2nofp"), parse_train("mix", 10)), folder).profile_file is None
    twin.layout.state_file.parent.mkdir(parents=True, exist_ok=True)
    trained = {"digest": "x", "seconds": 1.0, "training_digest": parse_train("mix", 10).digest()}
    twin.layout.state_file.write_text(json.dumps({"phases": {"train": trained}}))
    assert with_profile_from(request, folder) == request
    twin.layout.state_file.write_text(json.dumps({"phases": {"train": {**trained, "training_digest": "another"}}}))
    assert with_profile_from(request, folder).profile_file == made


def test_a_profile_is_kept_once_its_training_is_merged_before_the_optimized_compile(tmp_path, monkeypatch):
    """matrix --profiles keeps a training's profile as soon as it is merged (a session ending in the
    optimized compile then loses no training): the _bolt build's twin's, named after the twin, once;
    nothing for a training not merged yet or a profile imported from a file."""
    from pgolab import profile_file
    from pgolab.build import BuildRequest, Pipeline, keep_profile
    from pgolab.sources import SourceTree
    from pgolab.workloads import parse_train
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    (tmp_path / "src").mkdir()
    tree = SourceTree(tmp_path / "src", "postgresql", "15.18")
    request = BuildRequest(tree, parse("rel_pgo_use_bolt"), parse_train("mix", 10))
    twin = Pipeline(request).profile_owner
    folder = tmp_path / "profiles"
    twin.layout.state_file.parent.mkdir(parents=True, exist_ok=True)
    trained = {"digest": "x", "seconds": 1.0, "training_digest": parse_train("mix", 10).digest()}
    twin.layout.state_file.write_text(json.dumps({"phases": {"train": trained}}))
    assert keep_profile(Pipeline(request), folder) is None, "not merged yet"
    twin.profile_dir.mkdir(parents=True, exist_ok=True)
    (twin.profile_dir / "src#main.gcda").write_bytes(b"\x01\x02")
    from pgolab.profiles import GccProfile, raw_digest
    sealed = raw_digest(twin.profile_dir, GccProfile())
    twin.layout.state_file.write_text(json.dumps({"phases": {"train": trained, "merge": {"digest": "y", "sealed": "old"}}}))
    assert keep_profile(Pipeline(request), folder) is None, "counters written after the merge: not published"
    twin.layout.state_file.write_text(json.dumps({"phases": {"train": trained, "merge": {"digest": "y", "sealed": sealed}}}))
    said = keep_profile(Pipeline(request), folder)
    (kept,) = list(folder.iterdir())
    assert said == f"profile: {kept}" and kept.name.startswith("postgresql-15.18-rel_pgo_use-")
    identity = profile_file.read_identity(kept)
    assert (identity.trained_build, identity.training_digest) == ("rel_pgo_use", parse_train("mix", 10).digest())
    assert keep_profile(Pipeline(request), folder) == f"profile: {kept} (kept before)"
    twin.layout.state_file.write_text(json.dumps({"phases": {"profile-import": {"digest": "z"}, "merge": {"digest": "y"}}}))
    assert keep_profile(Pipeline(request), folder) is None, "imported, not trained here"
