"""MySQL from Debian through pgolab's own apt configuration, and its configure per variant axis.

A MySQL 9.7 server build takes far longer than CI's budget here (1,873 steps), so CI fetches the
tree and configures it; the builds, lifecycle and training runs are in docs/results/mysql-9.7/.
"""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pgolab import sources

from conftest import command_for, compile_one_object, configure_variant, need

PGOLAB = [sys.executable, "-m", "pgolab"]


def machine_apt_state() -> dict[str, str]:
    """Every file of the machine's apt configuration, lists and caches, with a content digest."""
    state = {}
    for root in ("/etc/apt", "/var/lib/apt/lists", "/var/cache/apt"):
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = Path(dirpath, name)
                if path.is_file() and not path.is_symlink():
                    state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@pytest.fixture(scope="module")
def mysql_tree():
    need("apt-get")
    before = machine_apt_state()
    result = subprocess.run([*PGOLAB, "source", "mysql"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert machine_apt_state() == before, "pgolab source changed the machine's apt state"
    assert re.search(r"mysql 9\.7\.\d+ \(Debian sid, source package version 9\.7", result.stderr + result.stdout)
    tree = sources.detect(Path(result.stdout.strip().splitlines()[-1]))
    assert tree.server == "mysql" and tree.version.startswith("9.7.")
    return tree


@pytest.mark.slow
def test_source_mysql_from_sid_leaves_the_machine_sources_alone(mysql_tree):
    assert (mysql_tree.path / "sql" / "mysqld.cc").is_file()
    assert not (mysql_tree.path / "storage" / "maria").exists()


# Two configures cover every axis: gcc and clang; o2nofp and -O3; native; LTO on, and LTO explicitly
# off under FPROFILE_USE (which turns MySQL's WITH_LTO default on); PGO instrumented and optimized.
AXES_SUBSET = ["rel_o2nofp_native_lto_pgo_gen", "rel_pgo_use", "rel_pgo_use_clang"]


@pytest.mark.slow
@pytest.mark.parametrize("name", AXES_SUBSET)
def test_configure_uses_mysql_own_options(mysql_tree, name):
    variant, pipeline, build, cache, commands = configure_variant(mysql_tree, name)

    def cached(key):
        match = re.search(rf"^{key}:\w+=(.*)$", cache, re.M)
        return match.group(1) if match else None

    assert cached("CMAKE_BUILD_TYPE") == "Release"
    assert cached("WITH_LTO") == ("ON" if variant.lto else "OFF")
    assert cached("FPROFILE_GENERATE") == ("ON" if variant.pgo == "gen" else "OFF")
    assert cached("FPROFILE_USE") == ("ON" if variant.pgo == "use" else "OFF")
    assert cached("FPROFILE_DIR") == str(pipeline.profile_dir)
    assert cached("WITH_ROUTER") == "OFF" and cached("WITH_MYSQLX") == "OFF"
    assert cached("WITH_PROTOBUF") == "system"

    argv = command_for(commands, "sql/sql_parse.cc")
    assert "-DNDEBUG" in argv, "the build type's flags must survive"
    _, flags = pipeline.stage_flags("final")
    for flag in flags.compile:
        assert flag in argv, f"pgolab's {flag} missing from the compile command"
    # The profile flags are MySQL's own, pointed at pgolab's profile folder.
    option = "-fprofile-generate" if variant.pgo == "gen" else "-fprofile-use"
    assert f"{option}={pipeline.profile_dir}" in argv
    # MySQL's own cmake/fprofile.cmake adds gcc's atomic counters to the instrumented build, and
    # -fprofile-correction and -fprofile-partial-training to the optimized one; pgolab keeps them.
    if variant.compiler == "gcc" and variant.pgo == "gen":
        assert "-fprofile-update=prefer-atomic" in argv
    if variant.compiler == "gcc" and variant.pgo == "use":
        assert "-fprofile-correction" in argv and "-fprofile-partial-training" in argv
    if variant.pgo != "none":
        assert cached("REPRODUCIBLE_BUILD") == "ON", "FPROFILE_* turns MySQL's reproducible build on"
    if variant.lto:
        assert any(a.startswith("-flto") for a in argv)
    else:
        assert not any(a.startswith("-flto") for a in argv)
    if variant.o2nofp:
        assert "-O2" in argv and "-fno-omit-frame-pointer" in argv
    if variant.native:
        assert "-march=native" in argv
    assert ("clang++" in argv[0] or "clang++" in " ".join(argv[:3])) == (variant.compiler == "clang")

    compile_one_object(build, commands, "strings/ctype-bin.cc")
