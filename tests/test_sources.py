import tarfile

import pytest

from pgolab import debian, sources
from pgolab.errors import PgolabError
from pgolab.runner import Runner

from conftest import need


def make_mariadb_like(root, maria=True, version_file="VERSION"):
    (root / "sql").mkdir(parents=True)
    if maria:
        (root / "storage" / "maria").mkdir(parents=True)
    (root / version_file).write_text("MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=11\nMYSQL_VERSION_PATCH=18\n")
    return root


def test_detects_mariadb_by_its_aria_engine(tmp_path):
    tree = sources.detect(make_mariadb_like(tmp_path / "m"))
    assert (tree.server, tree.version) == ("mariadb", "10.11.18")


def test_detects_mysql_8_4_from_mysql_version(tmp_path):
    root = make_mariadb_like(tmp_path / "my", maria=False, version_file="MYSQL_VERSION")
    (root / "MYSQL_VERSION").write_text("MYSQL_VERSION_MAJOR=8\nMYSQL_VERSION_MINOR=4\nMYSQL_VERSION_PATCH=3\n")
    assert sources.detect(root).server == "mysql"
    assert sources.detect(root).version == "8.4.3"


def test_detects_postgresql_and_a_tarball_of_it(tmp_path):
    root = tmp_path / "postgresql-15.18"
    (root / "src" / "backend" / "postmaster").mkdir(parents=True)
    (root / "configure.ac").write_text("AC_INIT([PostgreSQL], [15.18], [bugs])\n")
    assert sources.detect(root).server == "postgresql"
    tarball = tmp_path / "pg.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(root, arcname="postgresql-15.18")
    tree = sources.detect(tarball)
    assert tree.server == "postgresql" and tree.version == "15.18"
    assert sources.detect(tarball).path == tree.path   # unpacked once, reused


def test_refuses_other_trees_clearly(tmp_path):
    (tmp_path / "redis" / "src").mkdir(parents=True)
    (tmp_path / "redis" / "Makefile").write_text("all:\n")
    with pytest.raises(PgolabError) as err:
        sources.detect(tmp_path / "redis")
    assert "not a supported server source tree" in str(err.value)
    assert "MariaDB" in str(err.value)


def test_missing_path_and_non_tar_file(tmp_path):
    with pytest.raises(PgolabError, match="source not found"):
        sources.detect(tmp_path / "nope")
    junk = tmp_path / "junk.txt"
    junk.write_text("x")
    with pytest.raises(PgolabError, match="neither a directory nor a tar archive"):
        sources.detect(junk)


def test_tree_digest_changes_when_a_file_changes(tmp_path):
    root = make_mariadb_like(tmp_path / "m")
    before = sources.tree_digest(root)
    assert sources.tree_digest(root) == before
    (root / "sql" / "x.cc").write_text("int x;")
    assert sources.tree_digest(root) != before


def test_upstream_version_strips_epoch_and_debian_revision():
    assert debian.upstream_version("1:10.11.18-0+deb12u1") == "10.11.18"


MADISON = """\
   mariadb | 1:11.8.9+ds-4 | http://deb.debian.org/debian sid/main Sources
   mariadb | 1:11.8.6-0+deb13u1 | http://deb.debian.org/debian trixie/main Sources
   mariadb | 1:10.11.18-0+deb12u1 | http://deb.debian.org/debian bookworm/main Sources
 mysql-9.7 | 9.7.4-2 | http://deb.debian.org/debian sid/main Sources
 mysql-9.7 | 9.7.2-4 | http://deb.debian.org/debian sid/main Sources
"""


def test_madison_lines_give_package_version_and_suite():
    listed = debian.parse_madison(MADISON)
    assert listed[1] == debian.Listed("mariadb", "1:11.8.6-0+deb13u1", "trixie")
    assert [e.suite for e in listed] == ["sid", "trixie", "bookworm", "sid", "sid"]


def test_choice_prefers_debian_12_unless_a_version_is_asked_for():
    listed = debian.parse_madison(MADISON)
    mariadb = [e for e in listed if e.package == "mariadb"]
    assert [e.upstream for e in debian.choose(mariadb, None)] == ["10.11.18"]
    assert [e.upstream for e in debian.choose(mariadb, "11.8")] == ["11.8.9+ds", "11.8.6"]
    assert [e.upstream for e in debian.choose(mariadb, "11.8.6")] == ["11.8.6"]
    assert [e.upstream for e in debian.choose(mariadb, "11")] == ["11.8.9+ds", "11.8.6"]
    assert debian.choose(mariadb, "1") == []            # 1 is not a prefix of 10.11 or 11.8
    mysql = [e for e in listed if e.package == "mysql-9.7"]
    # Not in Debian 12 at all: newest first, so a listed-but-404 9.7.4 falls back to 9.7.2.
    assert [e.version for e in debian.choose(mysql, None)] == ["9.7.4-2", "9.7.2-4"]


def test_private_apt_options_point_only_at_its_own_folder(tmp_path):
    apt = debian.PrivateApt(tmp_path)
    opts = dict(o.split("=", 1) for o in apt.options() if o != "-o")
    assert opts["Dir::Etc::SourceList"] == "/dev/null"
    for key in ("Dir::Etc::SourceParts", "Dir::State::Lists", "Dir::Cache"):
        assert opts[key].startswith(str(tmp_path))
    text = apt.sources_text()
    assert "Types: deb-src\n" in text and "Types: deb\n" not in text


def test_versions_are_ordered_by_dpkg_and_every_comparison_is_logged(tmp_path):
    need("dpkg")
    runner = Runner(tmp_path / "versions.log")
    mysql = [e for e in debian.parse_madison(MADISON) if e.package == "mysql-9.7"]
    assert [e.version for e in debian.newest_first(mysql[::-1], runner)] == ["9.7.4-2", "9.7.2-4"]
    assert "dpkg --compare-versions" in (tmp_path / "versions.log").read_text()
