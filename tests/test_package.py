"""`pgolab package`: a PostgreSQL build configured like Debian's postgresql-15 (with the link and
run-time axes -fno-plt, -fno-semantic-interposition and jemalloc), packaged as a .deb that diverts
Debian's server binary, installed, run and removed in a throwaway Debian 12 root (mmdebstrap, never
this machine's own system); and as a tarball unpacked elsewhere and started."""

import json
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from pgolab import elf, package as package_mod
from pgolab.distribution import DistributionBuild, DroppedOption, tree_debian_version
from pgolab.errors import PgolabError
from pgolab.targets.postgresql import debian_configure

from conftest import need, thp_enabled
from conftest import test_scratch as scratch_root  # (a test_* name here would be collected as a test)
from debian_roots import answers, debian_root, in_root, pgolab, sha256

VARIANT = "rel_o2nofp_noplt_nosi_jemalloc_hugetext"
LABEL = f"{VARIANT}+debian"
SERVER = "/usr/lib/postgresql/15/bin/postgres"
# Start the cluster as Debian does (pg_ctlcluster), report the running binary and what it answers.
RUN_CLUSTER = f"""
pg_ctlcluster 15 main start
pid=$(head -1 /var/lib/postgresql/15/main/postmaster.pid)
echo "exe=$(readlink /proc/$pid/exe)"
echo "digest=$(sha256sum /proc/$pid/exe | cut -d' ' -f1)"
echo "version=$(su postgres -c "psql -Atc 'SELECT version()'")"
echo "ssl=$(su postgres -c "psql -Atc 'SHOW ssl'")"
pg_ctlcluster 15 main stop
"""


@pytest.mark.slow
def test_a_debian_configured_build_is_a_drop_in_deb_and_a_tarball(pg_tree, tmp_path):
    need("unshare")
    build = pgolab("build", str(pg_tree.path), "--variant", VARIANT, "--distribution-options", "--json", timeout=2400)
    assert build.returncode == 0, build.stdout + build.stderr
    record = json.loads(build.stdout)[0]
    version = tree_debian_version(pg_tree.path)
    # Debian's own version string: pg_ctl and initdb refuse a server whose version differs from theirs.
    assert record["label"] == LABEL and f"15.18 (Debian {version}) on" in record["smoke"]
    assert record["distribution"]["package"] == "postgresql-15"
    binary = Path(record["server_binary"])
    # The link and run-time axes: on every compile line, jemalloc needed, (almost) no PLT left against
    # Debian's build of the same server, which has one stub per library function it calls.
    assert any(n.startswith("libjemalloc.so") for n in elf.needed_libraries(binary))
    # _hugetext: the smoke test's server ran on a huge-page copy of its code, where the kernel allows it.
    if thp_enabled():
        assert record["huge_code_kib"] >= 2048, record["huge_code_kib"]
    log = (Path(record["logs"]) / "build.log").read_text(errors="replace")
    compiles = [line for line in log.splitlines() if " -c " in line and "postgres.c" in line]
    assert compiles and all("-fno-plt" in c and "-fno-semantic-interposition" in c for c in compiles)
    debian_postgres = Path(SERVER)
    plt = {s.name: s.size for s in elf.sections(binary)}.get(".plt", 0)
    assert plt < {s.name: s.size for s in elf.sections(debian_postgres)}[".plt"] / 4
    # Debian's features: OpenSSL, ICU, LZ4, zstd and systemd are linked as in Debian's binary.
    for lib in ("libssl", "libicuuc", "liblz4", "libzstd", "libsystemd"):
        assert any(n.startswith(lib) for n in elf.needed_libraries(binary)), lib

    out = tmp_path / "packages"
    deb = pgolab("package", LABEL, "--format", "deb", "-o", str(out), timeout=600)
    assert deb.returncode == 0, deb.stdout + deb.stderr
    # Against this machine's Debian binary, which may be of a later point release than the tree: a
    # parameter only it has must be one the tree does not define.
    said = " ".join((deb.stdout + deb.stderr).split())
    assert "configuration parameters (postgres --describe-config)" in said and "only in this build" not in said
    theirs = re.findall(r"only in the distribution's binary: `\w+`( \(not defined in the built source tree\))?", said)
    assert all(theirs), said
    deb_path = Path(deb.stdout.strip().splitlines()[-1])
    packaged_digest = re.search(r"sha256 as packaged: (\w+)", deb.stdout + deb.stderr).group(1)
    fields = subprocess.run(["dpkg-deb", "--field", str(deb_path)], capture_output=True, text=True).stdout
    assert f"postgresql-15 (= {version})" in fields and re.search(r"libjemalloc2 \(>= [^)]+\)", fields), fields

    root = debian_root("postgresql-15", version, tmp_path / "root")
    shutil.copy(deb_path, root / "tmp" / "pgolab.deb")
    debian_digest = sha256(root / SERVER.lstrip("/"))
    before = answers(in_root(root, RUN_CLUSTER).stdout)
    assert before["digest"] == debian_digest and f"(Debian {version})" in before["version"] and before["ssl"] == "on"

    # apt resolves what the package depends on (jemalloc is not in the root yet) and runs its preinst.
    in_root(root, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/pgolab.deb", network=True)
    assert f"diversion of {SERVER} to {SERVER}.distrib by pgolab-postgresql-15" in \
        in_root(root, f"dpkg-divert --list {SERVER}").stdout
    assert sha256(root / f"{SERVER.lstrip('/')}.distrib") == debian_digest
    replaced = answers(in_root(root, RUN_CLUSTER).stdout)
    assert replaced["exe"] == SERVER and replaced["digest"] == packaged_digest
    assert replaced["version"] == before["version"] and replaced["ssl"] == "on"
    docs = root / "usr/share/doc/pgolab-postgresql-15"
    assert json.loads((docs / "build.json").read_text())["binary_digest"] == record["binary_digest"]
    assert "--with-llvm" in (docs / "README.md").read_text()     # what was left out, and why

    in_root(root, "dpkg -r pgolab-postgresql-15")
    assert in_root(root, f"dpkg-divert --list {SERVER}").stdout.strip() == ""
    assert not (root / f"{SERVER.lstrip('/')}.distrib").exists()
    after = answers(in_root(root, RUN_CLUSTER).stdout)
    assert after["digest"] == debian_digest and after["version"] == before["version"]

    # The tarball, unpacked elsewhere: its setup script initialises a data directory, its server starts
    # from there, and its psql loads the tarball's own libpq.
    tar = pgolab("package", LABEL, "--format", "tar", "-o", str(out), timeout=600)
    assert tar.returncode == 0, tar.stdout + tar.stderr
    unpacked = scratch_root() / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    with tarfile.open(tar.stdout.strip().splitlines()[-1]) as f:
        f.extractall(unpacked, filter="fully_trusted")
    top = next(unpacked.iterdir())
    subprocess.run(["chown", "-R", "pgolab", str(unpacked)], check=True)
    as_user = ["runuser", "-u", "pgolab", "--"]
    data, sock = unpacked / "data", unpacked / "sock"
    sock.mkdir()
    subprocess.run(["chown", "pgolab", str(sock)], check=True)
    setup = subprocess.run([*as_user, str(top / "setup-datadir"), str(data)], capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    bindir = top / "usr/lib/postgresql/15/bin"
    server_log = unpacked / "server.log"
    with server_log.open("w") as log:
        server = subprocess.Popen([*as_user, str(bindir / "postgres"), "-D", str(data), "-c", "listen_addresses=",
                                   "-k", str(sock), "-p", "5499"], stdout=subprocess.DEVNULL, stderr=log)
    try:
        # The socket appears before the server accepts connections ("the database system is starting
        # up", seen in CI): ask again while it is not there or says so, for a minute at most.
        deadline = time.monotonic() + 60
        while True:
            psql = subprocess.run([*as_user, str(bindir / "psql"), "-w", "-h", str(sock), "-p", "5499", "-d", "postgres",
                                   "-Atc", "SELECT version()"], capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
            starting = any(s in psql.stderr for s in ("starting up", "No such file or directory", "Connection refused"))
            if not starting or time.monotonic() > deadline or server.poll() is not None:
                break
            time.sleep(0.2)
        assert psql.returncode == 0 and f"(Debian {version})" in psql.stdout, \
            psql.stderr + "\nserver log:\n" + server_log.read_text()[-2000:]
        pid = (data / "postmaster.pid").read_text().split()[0]
        assert Path(f"/proc/{pid}/exe").resolve() == (bindir / "postgres").resolve()
        ldd = subprocess.run(["ldd", str(bindir / "psql")], capture_output=True, text=True).stdout
        assert str(top) in next(line for line in ldd.splitlines() if "libpq.so" in line)
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_debian_options_keep_the_server_s_features_and_drop_what_builds_other_things():
    recorded = ["--prefix=/usr", "--runstatedir=/run", "--with-openssl", "--with-perl", "--with-llvm",
                "LLVM_CONFIG=/usr/bin/llvm-config-14", "CFLAGS=-g -O2 -fstack-protector-strong -fno-omit-frame-pointer",
                "--with-extra-version= (Debian 15.20-0+deb12u1)", "--enable-tap-tests"]
    kept, dropped = debian_configure(recorded, "15.18-0+deb12u1", "ac_subst --prefix")
    assert kept == ["--prefix=/usr", "--with-openssl", "CFLAGS=-g -fstack-protector-strong",
                    "--with-extra-version= (Debian 15.18-0+deb12u1)"]
    assert {d.option.split("=")[0] for d in dropped} == {
        "--runstatedir", "--with-perl", "--with-llvm", "LLVM_CONFIG", "CFLAGS: -O2 -fno-omit-frame-pointer",
        "--with-extra-version", "--enable-tap-tests"}
    assert all(d.why for d in dropped)


DISTRIBUTION = DistributionBuild("postgresql-15", "15.18-0+deb12u1", SERVER, ("--prefix=/usr",),
                                 (DroppedOption("--with-llvm", "why"),), "pg_config --configure")


def test_the_package_depends_on_exactly_the_version_it_replaces_and_diverts_its_binary_back_on_removal():
    from pgolab.record import BuildRecord, SourceInfo
    record = BuildRecord("x+debian", VARIANT, "gcc -O2", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l",
                         binary_digest="0123456789" + "ab" * 27)
    control = package_mod.control_file(record, DISTRIBUTION, ["libc6 (>= 2.34)"], "amd64")
    # Two builds of one version are two package versions, told by their binaries.
    assert "Package: pgolab-postgresql-15\n" in control and "Version: 15.18-0+deb12u1+pgolab.0123456789\n" in control
    assert "Depends: postgresql-15 (= 15.18-0+deb12u1), libc6 (>= 2.34)\n" in control
    scripts = package_mod.maintainer_scripts(DISTRIBUTION)
    assert f"--divert {SERVER}.distrib --add {SERVER}" in scripts["preinst"]
    assert f"--divert {SERVER}.distrib --remove {SERVER}" in scripts["postrm"]
    assert "abort-install" in scripts["postrm"]


def test_a_build_configured_pgolab_s_way_is_refused_as_a_deb(tmp_path):
    from pgolab.record import BuildRecord, SourceInfo
    record = BuildRecord(VARIANT, VARIANT, "gcc -O2", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l")
    with pytest.raises(PgolabError, match="configured pgolab's way") as err:
        package_mod.make_deb(record, tmp_path, None)
    assert "--distribution-options" in err.value.hint
    with pytest.raises(PgolabError, match="unknown package format"):
        package_mod.package(VARIANT, "rpm", tmp_path, None)


def test_a_tree_without_debian_packaging_is_refused(tmp_path):
    with pytest.raises(PgolabError, match="no debian/changelog") as err:
        tree_debian_version(tmp_path)
    assert "pgolab source" in err.value.hint


def test_the_measured_gain_is_the_run_s_headline_row_for_the_build_and_another_label_is_refused(tmp_path):
    from pgolab.record import BuildRecord, SourceInfo
    from test_report import synthetic_store
    store = synthetic_store(tmp_path, speedup=1.25)
    record = BuildRecord("b", VARIANT, "gcc -O2", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l")
    gain = package_mod.measured_gain(record, store, "r")
    assert "base a" in gain and "host:" in gain and "| b |" in gain and "| a |" not in gain
    assert re.search(r"\| b \| 1\.2[45]", gain), gain
    with pytest.raises(PgolabError, match="measured no build 'c'") as err:
        package_mod.measured_gain(BuildRecord("c", VARIANT, "", "postgresql", SourceInfo(), {}, {}, "", "", ""),
                                  store, "r")
    assert "its builds: b;" in err.value.hint


def test_without_the_distribution_s_pg_config_the_options_are_refused_with_its_package(tmp_path):
    from pgolab.runner import Runner
    from pgolab.sources import SourceTree
    from pgolab.targets import target_for
    tree = SourceTree(tmp_path, "postgresql", "99.1")
    with pytest.raises(PgolabError, match="pg_config not found") as err:
        target_for("postgresql").distribution_build(tree, Runner(tmp_path / "log"))
    assert err.value.hint == "apt-get install postgresql-client-99"
    with pytest.raises(PgolabError, match="no debian/rules") as err:
        target_for("mariadb").distribution_build(SourceTree(tmp_path, "mariadb", "10.11.18"), Runner(tmp_path / "log"))
    assert "pgolab source mariadb" in err.value.hint
    with pytest.raises(PgolabError, match="no MySQL server package"):
        target_for("mysql").distribution_build(SourceTree(tmp_path, "mysql", "9.7.2"), Runner(tmp_path / "log"))


MAKE_DRY_RUN = r'''echo "RULES.override_dh_auto_configure"
dh_testdir
sed -i 's/__MARIADB_MAJOR_VER__/10.11/g' debian/mariadb-server.post* debian/mariadb-server.preinst
PATH=${MYSQL_BUILD_PATH:-"/usr/lib/ccache:/usr/local/bin:/usr/bin:/bin"} \
    dh_auto_configure --builddirectory=builddir -- \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWITH_PMEM=ON \
     \
    -DCOMPILATION_COMMENT="Debian 12 " \
    -DMYSQL_SERVER_SUFFIX="-0+deb12u1" \
    -DBUILD_CONFIG=mysql_release \
    -DDEB=Debian
'''
NO_ACT = ("\tcd builddir && cmake -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_SYSCONFDIR=/etc "
          "\"-GUnix Makefiles\" -DCMAKE_VERBOSE_MAKEFILE=ON -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu "
          "-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWITH_PMEM=ON \"-DCOMPILATION_COMMENT=Debian 12 \" -DDEB=Debian ..\n")


def test_mariadb_s_debian_options_are_read_as_debian_s_build_runs_them():
    from pgolab.targets.mariadb import debian_cmake_options, dh_cmake_argv, dh_configure_args
    args = dh_configure_args(MAKE_DRY_RUN)
    assert args[:2] == ["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DWITH_PMEM=ON"]
    assert "-DCOMPILATION_COMMENT=Debian 12 " in args and args[-1] == "-DDEB=Debian"
    argv = dh_cmake_argv(NO_ACT)
    assert argv[0] == "-DCMAKE_INSTALL_PREFIX=/usr" and ".." not in argv and "-GUnix Makefiles" in argv
    flags = {"CFLAGS": "-g -O2 -ffile-prefix-map=/src=. -fstack-protector-strong -D_FORTIFY_SOURCE=2",
             "CXXFLAGS": "-g -O2 -fstack-protector-strong", "LDFLAGS": "-Wl,-z,relro -Wl,-z,now"}
    kept, dropped = debian_cmake_options(argv, flags)
    assert "-DDEB=Debian" in kept and "-DCMAKE_INSTALL_SYSCONFDIR=/etc" in kept and "-DCMAKE_VERBOSE_MAKEFILE=ON" in kept
    assert "-DCMAKE_C_FLAGS=-fstack-protector-strong -D_FORTIFY_SOURCE=2" in kept
    assert "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-z,relro -Wl,-z,now" in kept
    assert not any(a.startswith(("-DCMAKE_BUILD_TYPE", "-G")) for a in kept)
    assert {d.option for d in dropped} >= {"-DCMAKE_BUILD_TYPE=None", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                                           "-GUnix Makefiles", "build flags: -O2 -ffile-prefix-map=/src=. -g"}
    with pytest.raises(PgolabError, match="no dh_auto_configure"):
        dh_configure_args("dh_testdir\n")
