"""The MariaDB drop-in .deb (issue 33), beyond CI's time (its build is a PGO build of mariadbd
configured like Debian's mariadb-server): packaged, installed over Debian's mariadb-server in a
throwaway Debian 12 root, started as Debian starts it (its init script), its plugins and engines
compared with those of Debian's binary in the same root, then removed. The proof
docs/results/mariadb-10.11-deb builds the package's build and runs this with PGOLAB_LONG_TESTS=1."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from pgolab.distribution import tree_debian_version
from pgolab.record import BuildRecord

from conftest import long_test, need
from debian_roots import answers, debian_root, in_root, pgolab, sha256

LABEL = os.environ.get("PGOLAB_DEB_BUILD", "rel_lto_pgo_use_clang+debian")
SERVER = "/usr/sbin/mariadbd"
# Start the server as Debian's package does without systemd (its init script, through mariadbd-safe),
# report the running binary, its answer, and what it offers; stop it the same way.
RUN_SERVER = f"""
/etc/init.d/mariadb start >/dev/null
pid=$(cat /run/mysqld/mysqld.pid)
echo "exe=$(readlink /proc/$pid/exe)"
echo "digest=$(sha256sum /proc/$pid/exe | cut -d' ' -f1)"
echo "version=$(mariadb -Nse 'SELECT VERSION()')"
echo "comment=$(mariadb -Nse 'SELECT @@version_comment')"
echo "plugins=$(mariadb -Nse "SELECT GROUP_CONCAT(CONCAT(PLUGIN_NAME, ':', PLUGIN_STATUS) ORDER BY PLUGIN_NAME) FROM information_schema.PLUGINS")"
echo "engines=$(mariadb -Nse "SELECT GROUP_CONCAT(CONCAT(ENGINE, ':', SUPPORT) ORDER BY ENGINE) FROM information_schema.ENGINES")"
/etc/init.d/mariadb stop >/dev/null
"""


@long_test("a MariaDB PGO build configured like Debian's, packaged and installed in a throwaway root")
def test_the_mariadb_deb_replaces_debians_server_with_the_same_plugins_and_engines(tmp_path):
    need("unshare")
    record = BuildRecord.find(LABEL)
    assert record.server == "mariadb" and record.distribution_build is not None
    version = tree_debian_version(record.source_path)
    assert record.distribution_build.version == version

    deb = pgolab("package", LABEL, "--format", "deb", "-o", str(tmp_path / "packages"), timeout=900)
    assert deb.returncode == 0, deb.stdout + deb.stderr
    said = " ".join((deb.stdout + deb.stderr).split())
    print(said)
    # Against this machine's Debian binary, which may be of a later point release than the tree: an
    # option only it has must be one the tree does not define; none only in this build.
    assert "options and variables (mariadbd --no-defaults --help --verbose)" in said
    assert "only in this build" not in said
    assert all(re.findall(r"only in the distribution's binary: `[\w-]+`( \(not defined in the built source tree\))?",
                          said))
    deb_path = Path(deb.stdout.strip().splitlines()[-1])
    packaged_digest = re.search(r"sha256 as packaged: (\w+)", deb.stdout + deb.stderr).group(1)
    fields = subprocess.run(["dpkg-deb", "--field", str(deb_path)], capture_output=True, text=True).stdout
    assert f"mariadb-server-core (= {version})" in fields, fields

    root = debian_root("mariadb-server", version, tmp_path / "root")
    shutil.copy(deb_path, root / "tmp" / "pgolab.deb")
    debian_digest = sha256(root / SERVER.lstrip("/"))
    before = answers(in_root(root, RUN_SERVER).stdout)
    print(json.dumps({"debian": before}, indent=1))
    assert before["digest"] == debian_digest and version.split(":")[-1].split("-")[0] in before["version"]

    in_root(root, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/pgolab.deb", network=True)
    assert f"diversion of {SERVER} to {SERVER}.distrib by pgolab-mariadb-server-core" in \
        in_root(root, f"dpkg-divert --list {SERVER}").stdout
    replaced = answers(in_root(root, RUN_SERVER).stdout)
    print(json.dumps({"pgolab": replaced}, indent=1))
    assert replaced["exe"] == SERVER and replaced["digest"] == packaged_digest
    # The same server as far as a client can tell: version string, comment, plugins and engines.
    for key in ("version", "comment", "plugins", "engines"):
        assert replaced[key] == before[key], key

    in_root(root, "dpkg -r pgolab-mariadb-server-core")
    assert in_root(root, f"dpkg-divert --list {SERVER}").stdout.strip() == ""
    after = answers(in_root(root, RUN_SERVER).stdout)
    assert after["digest"] == debian_digest and after["version"] == before["version"]
