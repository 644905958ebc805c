"""Builds that are the same wherever they are built (issue 30): no path of the machine, no clock."""

import os

import pytest

from pgolab import reproducible

from thinlto import link_thinlto


def test_the_date_of_a_debian_changelog_is_the_build_date():
    text = ("postgresql-15 (15.18-0+deb12u1) bookworm-security; urgency=medium\n\n  * New upstream release.\n\n"
            " -- Christoph Berg <myon@debian.org>  Tue, 11 Nov 2025 10:20:30 +0100\n\n"
            "postgresql-15 (15.17-0+deb12u1) bookworm; urgency=medium\n\n"
            " -- Christoph Berg <myon@debian.org>  Mon, 01 Sep 2025 00:00:00 +0000\n")
    assert reproducible.changelog_epoch(text) == 1762852830     # the newest entry's, not the clock
    assert reproducible.changelog_epoch("no trailer line\n") is None


def test_a_tree_without_a_changelog_takes_its_newest_top_level_file(tmp_path):
    for name, mtime in (("configure", 1_700_000_000), ("README", 1_600_000_000)):
        (tmp_path / name).write_text(name)
        os.utime(tmp_path / name, (mtime, mtime))
    (tmp_path / "src").mkdir()
    assert reproducible.source_date_epoch(tmp_path) == 1_700_000_000
    assert reproducible.build_env(tmp_path) == {"SOURCE_DATE_EPOCH": "1700000000"}


def test_paths_of_the_machine_are_mapped_to_stand_ins(tmp_path):
    flags = reproducible.prefix_map_flags(tmp_path / "src", tmp_path / "b")
    assert flags == [f"-ffile-prefix-map={tmp_path / 'src'}={reproducible.SOURCE_STANDIN}",
                     f"-ffile-prefix-map={tmp_path / 'b'}={reproducible.BUILD_STANDIN}"]


def test_postgresql_records_a_stand_in_for_the_profile_folder_and_compiles_with_the_real_one(tmp_path, monkeypatch):
    """PostgreSQL's src/common records CFLAGS while make parses it (a simple variable); the recipe reads
    them when it runs. With the make arguments pgolab passes, a makefile of that shape (real GNU make,
    a sub-make as PostgreSQL's recursion) records the stand-in and compiles with the real folder."""
    import shutil
    import subprocess

    from pgolab.layout import tree_folder_of
    from pgolab.targets.postgresql import PostgreSQLTarget
    from pgolab.variants import FlagSet
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    build_dir = tmp_path / "home" / "builds" / "postgresql-15.18-0123456789" / "rel_pgo_use" / "final" / "build"
    folder = tree_folder_of(build_dir)
    assert folder == tmp_path / "home" / "builds" / "postgresql-15.18-0123456789"
    profile = folder / "rel_pgo_use" / "profile"
    obj = build_dir / "pgolab-hugetext.o"
    flags = FlagSet([f"-fprofile-use={profile}", f"-fprofile-prefix-path={build_dir}"], [f"-Wl,{obj}"], {},
                    {str(obj): "pgolab_hugetext.c"})
    argv = PostgreSQLTarget().make_vars(flags, build_dir)
    sub = tmp_path / "mk" / "common"
    sub.mkdir(parents=True)
    (tmp_path / "mk" / "Makefile").write_text("all:\n\t@$(MAKE) -s -C common\n")
    (sub / "Makefile").write_text(
        "CFLAGS = -O2\nCFLAGS += $(COPT)\noverride CPPFLAGS := -I.\n"
        "override CPPFLAGS += -DVAL_CFLAGS=\"$(CFLAGS)\"\n"
        "all:\n\t@echo 'recorded: $(CPPFLAGS)'\n\t@echo 'compiled: $(CFLAGS)'\n")
    if shutil.which("make") is None:
        pytest.skip("no make")
    out = subprocess.run(["make", "-s", "-C", str(tmp_path / "mk"), *argv], capture_output=True, text=True, check=True).stdout
    recorded = next(line for line in out.splitlines() if line.startswith("recorded:"))
    compiled = next(line for line in out.splitlines() if line.startswith("compiled:"))
    assert str(tmp_path) not in recorded and "-fprofile-use=/pgolab/builds/rel_pgo_use/profile" in recorded
    assert f"-fprofile-use={profile}" in compiled and f"-fprofile-prefix-path={build_dir}" in compiled
    # pgolab's own object is linked, and not recorded at all (pg_config would name a file of the build).
    assert f"-Wl,{obj}" in compiled and "hugetext" not in recorded


def test_clang_thinlto_at_two_tree_paths_differs_in_symbol_names_only(tmp_path):
    """What the three-machines proof found on PostgreSQL, on two files: clang keeps the source file's
    path in each ThinLTO module (-ffile-prefix-map does not reach it) and names a promoted local
    function after the module's hash, so one tree at two paths links two files; what they run (every
    loaded section but the build ID) is the same, and a change of code changes it."""
    import subprocess

    from pgolab import elf
    one, two = link_thinlto(tmp_path / "one"), link_thinlto(tmp_path / "two" / "deeper")
    promoted = subprocess.run(["nm", str(one)], capture_output=True, text=True, check=True).stdout
    assert "helper.llvm." in promoted       # ThinLTO imported api() into b.c's module and promoted helper
    assert one.read_bytes() != two.read_bytes()
    assert elf.loaded_digest(one) is not None and elf.loaded_digest(one) == elf.loaded_digest(two)
    assert elf.loaded_digest(tmp_path / "one" / "src" / "a.c") is None     # not an ELF file: no digest
    assert elf.loaded_digest(link_thinlto(tmp_path / "three", factor=9)) != elf.loaded_digest(one)
