"""`pgolab cmake-module` (issue 33): the CMake module that makes `cmake -DWITH_PGO=ON` build a MariaDB
or MySQL server instrumented, train it with pgolab, and build it optimized. The hook's placement is
pure logic; the driver is configured by the real cmake (configure only: the whole build is a proof,
docs/results/mariadb-10.11-cmake-pgo)."""

import subprocess
from pathlib import Path

import pytest

from pgolab import cmake_module
from pgolab.errors import PgolabError
from pgolab.sources import SourceTree
from pgolab.targets import installation_for_binary
from pgolab.targets.base import cmake_build_folder

from conftest import need

MYSQL_LIKE = """CMAKE_MINIMUM_REQUIRED(VERSION 3.17.5)
INCLUDE(mysql_version)
PROJECT(${MYSQL_PROJECT_NAME}
  VERSION ${MAJOR_VERSION}.${MINOR_VERSION}.${PATCH_VERSION})
SET(CMAKE_CXX_STANDARD 23)
"""


def test_the_hook_follows_project_even_across_lines_and_is_placed_once():
    hooked = cmake_module.hooked(MYSQL_LIKE, Path("CMakeLists.txt"))
    lines = hooked.splitlines()
    assert lines[3].endswith("PATCH_VERSION})") and lines[4] == cmake_module.HOOK_BEGIN
    assert lines[-1] == "SET(CMAKE_CXX_STANDARD 23)"
    assert cmake_module.hooked(hooked, Path("CMakeLists.txt")) == hooked
    with pytest.raises(PgolabError, match="no project"):
        cmake_module.hooked("add_executable(x x.c)\n", Path("CMakeLists.txt"))


def test_a_tree_that_does_not_build_with_cmake_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(PgolabError) as err:
        cmake_module.write_module(SourceTree(tmp_path, "postgresql", "15.18"), [])
    assert "pgolab train --binary" in err.value.hint


def test_the_module_names_the_server_its_training_targets_and_pgolab(tmp_path):
    text = cmake_module.render(SourceTree(tmp_path, "mysql", "9.7.2"), ["--train", "mix", "--train-seconds", "60"],
                               ["/opt/venv/bin/python", "-m", "pgolab"])
    assert "--build <BINARY_DIR> --target mysqld mysql mysqladmin" in text
    assert "train --binary <BINARY_DIR>/runtime_output_directory/mysqld" in text
    assert "/opt/venv/bin/python -m pgolab train" in text and "--train mix --train-seconds 60" in text
    assert "-fprofile-use=${PGOLAB_PROFILE_DIR}/default.profdata" in text


def test_a_server_in_its_cmake_build_folder_is_run_from_that_folder(tmp_path):
    build, source = tmp_path / "build", tmp_path / "src"
    (build / "sql").mkdir(parents=True)
    binary = build / "sql" / "mariadbd"
    binary.write_bytes(b"")
    assert cmake_build_folder(binary, "sql/mariadbd") is None        # no CMakeCache.txt: not a build folder
    (build / "CMakeCache.txt").write_text(f"CMAKE_BUILD_TYPE:STRING=Release\nCMAKE_HOME_DIRECTORY:INTERNAL={source}\n")
    assert cmake_build_folder(binary, "sql/mariadbd") == build
    installation = installation_for_binary(binary)
    assert installation.install_db == [str(build / "scripts" / "mariadb-install-db"), f"--srcdir={source}",
                                       f"--builddir={build}"]
    assert installation.lc_messages_dir == build / "sql" / "share"


def write_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(server C CXX)\n"
                                         "message(FATAL_ERROR \"the tree's own configuration ran\")\n")
    return tree


def configure(tree: Path, build: Path, cc: str, cxx: str, *args: str) -> subprocess.CompletedProcess:
    build.mkdir()
    return subprocess.run(["cmake", "-G", "Ninja", "-DWITH_PGO=ON", *args, str(tree)], cwd=build,
                          env={"PATH": "/usr/bin:/bin", "CC": cc, "CXX": cxx}, capture_output=True, text=True,
                          timeout=300)


def test_with_pgo_configures_the_three_step_driver_with_the_users_options(tmp_path):
    need("cmake")
    need("clang-16")
    need("ninja")
    tree = write_tree(tmp_path)
    written = cmake_module.write_module(SourceTree(tree, "mariadb", "10.11.18"), ["--train", "mix"])
    assert written.hooked
    build = tmp_path / "build"
    done = configure(tree, build, "clang-16", "clang++-16", "-DPLUGIN_ROCKSDB=NO", "-DCMAKE_BUILD_TYPE=RelWithDebInfo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the tree's own configuration ran" not in done.stdout + done.stderr
    ninja = (build / "build.ninja").read_text()
    for step in ("pgo-instrumented-train", "pgo-optimized-verify"):
        assert step in ninja, step
    assert "pgolab train --binary" in ninja and "pgolab verify --binary" in ninja
    # Each inner build is configured with the user's option, the compilers and the profile flag.
    args = (build / "pgo" / "steps" / "tmp" / "pgo-instrumented-cache-RelWithDebInfo.cmake")
    configure_line = ninja + (args.read_text() if args.exists() else "")
    assert "-DPLUGIN_ROCKSDB=NO" in configure_line and "-DWITH_PGO=OFF" in configure_line
    assert "-fprofile-generate=" in configure_line and "-fprofile-use=" in configure_line
    assert "clang++-16" in configure_line
    # gcc's counters are not what pgolab train merges: refused at configure, saying what to do.
    refused = configure(tree, tmp_path / "gcc-build", "gcc", "g++")
    assert refused.returncode != 0 and "CC=clang-16 CXX=clang++-16" in refused.stderr.replace("\n  ", " ")


def test_verify_refuses_a_server_outside_its_cmake_build_folder(tmp_path):
    from pgolab.user_build import verify_binary
    binary = tmp_path / "bin" / "mariadbd"
    binary.parent.mkdir()
    binary.write_bytes(b"")
    with pytest.raises(PgolabError, match="not in a CMake build folder") as err:
        verify_binary(binary)
    assert "BUILD/sql/mariadbd" in err.value.hint
