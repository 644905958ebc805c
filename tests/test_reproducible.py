"""Builds that are the same wherever they are built (issue 30): no path of the machine, no clock."""

import os

from pgolab import reproducible


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
