"""Configure a real MariaDB tree with pgolab's flags for variants covering every axis.

A full MariaDB build takes 15+ minutes here, so CI configures (and compiles one
small object of) each variant instead; docs/results/ has the full builds.
"""

import re

import pytest

from pgolab import debian
from pgolab.build import like_distribution
from pgolab.runner import Runner

from conftest import command_for, compile_one_object, configure_variant, need

# Two configures cover every axis: gcc and clang; o2nofp and -O3; native; LTO with each
# compiler's archiver; PGO instrumented (gcc) and optimized (clang); pgolab's own options and
# Debian's (the clang build is configured like mariadb-server, as `pgolab package` needs).
AXES_SUBSET = [("rel_o2nofp_native_lto_pgo_gen", False), ("rel_lto_pgo_use_clang", True)]


@pytest.fixture(scope="module")
def mariadb_tree(tmp_path_factory):
    need("apt-get")
    return debian.fetch("mariadb", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


@pytest.mark.slow
@pytest.mark.parametrize("name, like_debian", AXES_SUBSET)
def test_configure_with_variant_flags(mariadb_tree, name, like_debian):
    assert mariadb_tree.server == "mariadb" and mariadb_tree.version.startswith("10.11")
    distribution = like_distribution(mariadb_tree) if like_debian else None
    variant, pipeline, build, cache, commands = configure_variant(mariadb_tree, name, distribution)
    assert "CMAKE_BUILD_TYPE:STRING=Release" in cache
    if like_debian:
        # Debian's line, read from debian/rules by make and debhelper: its layout, Galera's wsrep
        # (pgolab's own build leaves it out), its version suffix, its hardening flags beside the variant's.
        assert re.search(r"^INSTALL_LAYOUT:\w+=DEB$", cache, re.M) and "PLUGIN_WSREP_INFO:STRING=DYNAMIC" in cache
        assert f"MYSQL_SERVER_SUFFIX:UNINITIALIZED=-{distribution.version.rsplit('-', 1)[1]}" in cache
        assert not re.search(r"^PLUGIN_ROCKSDB:\w+=NO$", cache, re.M)
        assert "-D_FORTIFY_SOURCE=2" in command_for(commands, "sql/sql_parse.cc")
        # wsrep-lib turns -g on for its objects: clang's DWARF 4, which valgrind (cost mode) reads.
        assert "-fdebug-default-version=4" in command_for(commands, "wsrep-lib/src/client_state.cpp")
        assert any(d.option.startswith("-DCMAKE_BUILD_TYPE=") for d in distribution.dropped)
    else:
        assert re.search(r"^PLUGIN_ROCKSDB:\w+=NO$", cache, re.M) and "WITH_WSREP:BOOL=OFF" in cache

    # No DTrace probes, as in Debian's mariadbd: their object would carry the build's paths (and a
    # machine without systemtap's dtrace would build another binary).
    assert re.search(r"^ENABLE_DTRACE:\w+=OFF$", cache, re.M)
    argv = command_for(commands, "sql/sql_parse.cc")
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

    compile_one_object(build, commands, "strings/ctype-bin.c")
