"""Configure a real MariaDB tree with pgolab's flags for variants covering every axis.

A full MariaDB build takes 15+ minutes here, so CI configures (and compiles one
small object of) each variant instead; docs/results/ has the full builds.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from pgolab import sources, debian
from pgolab.build import Pipeline, BuildRequest
from pgolab.runner import Runner
from pgolab.stages.compile import configure
from pgolab.variants import parse
from pgolab.workloads import parse_train

from conftest import need, write_empty_clang_profile

# Two configures cover every axis: gcc and clang; o2nofp and -O3; native; LTO with each
# compiler's archiver; PGO instrumented (gcc) and optimized (clang).
AXES_SUBSET = ["rel_o2nofp_native_lto_pgo_gen", "rel_lto_pgo_use_clang"]


@pytest.fixture(scope="module")
def mariadb_tree(tmp_path_factory):
    need("apt-get")
    return debian.fetch("mariadb", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


@pytest.mark.slow
@pytest.mark.parametrize("name", AXES_SUBSET)
def test_configure_with_variant_flags(mariadb_tree, name):
    assert mariadb_tree.server == "mariadb" and mariadb_tree.version.startswith("10.11")
    variant = parse(name)
    pipeline = Pipeline(BuildRequest(mariadb_tree, variant, parse_train("none", 1)))
    if variant.pgo == "use" and variant.compiler == "clang":
        # clang reads the merged profile while compiling: give it a real, empty one.
        write_empty_clang_profile(pipeline.profile_dir / "default.profdata")
    configure(pipeline)
    build = pipeline.build_dir("final")
    cache = (build / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Release" in cache
    assert re.search(r"^PLUGIN_ROCKSDB:\w+=NO$", cache, re.M) and "WITH_WSREP:BOOL=OFF" in cache

    subprocess.run(["cmake", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", str(build)], check=True, capture_output=True)
    commands = json.loads((build / "compile_commands.json").read_text())
    entry = next(c for c in commands if c["file"].endswith("sql/sql_parse.cc"))
    argv = entry["command"].split()
    assert "-DNDEBUG" in argv, "the build type's flags must survive"
    _, flags = pipeline.stage_flags("final")
    for flag in flags.compile:
        assert flag in argv, f"{flag} missing from the compile command"
    if variant.o2nofp:
        assert argv.index("-O3") < argv.index("-O2")
    if variant.compiler == "clang":
        assert "clang++-16" in argv[0] or "clang++" in argv[0]
        assert "llvm-ar-16" in cache
    if variant.lto and variant.compiler == "gcc":
        assert "gcc-ar" in cache

    # One small object really compiles with these flags.
    small = next(c["command"].split() for c in commands if c["file"].endswith("strings/ctype-bin.c"))
    obj = small[small.index("-o") + 1]
    subprocess.run(["ninja", "-C", str(build), obj], check=True, capture_output=True)
    assert (build / obj).stat().st_size > 0
