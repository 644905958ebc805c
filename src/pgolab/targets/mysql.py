"""MySQL (9.7 from Debian, or an 8.0/8.4/9.x tree the user brings): MySQL's own CMake options where they exist."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from ..distribution import DistributionBuild
from ..errors import PgolabError
from ..toolchains import compiler_family
from ..variants import FlagSet, Variant
from .base import Cmd
from .mariadb import MariaDBInstallation, MariaDBTarget

# The one place that says what a pgolab MySQL build leaves out: the router, NDB, unit tests, the X
# protocol plugin and telemetry. InnoDB, MyISAM and the other built-in engines stay. Options a tree does
# not know (8.0 has no telemetry) only draw a CMake warning.
MYSQL_CMAKE_OPTIONS: dict[str, str] = {
    "WITH_UNIT_TESTS": "OFF",
    "WITH_ROUTER": "OFF",
    "WITH_NDB": "OFF",
    "WITH_NDBCLUSTER_STORAGE_ENGINE": "OFF",
    "WITH_MYSQLX": "OFF",
    "WITH_MYSQL_SERVER_TELEMETRY": "OFF",
    "WITH_MYSQL_CLIENT_TELEMETRY": "OFF",
    "WITH_DEBUG": "OFF",
    # Debian 12's libraries (scripts/setup-system.sh installs them) instead of the bundled copies: 1,873
    # build steps instead of 2,619 for MySQL 9.7, and none of them is on a query's hot path.
    "WITH_SSL": "system",
    "WITH_ZLIB": "system",
    "WITH_ZSTD": "system",
    "WITH_LZ4": "system",
    "WITH_ICU": "system",
    "WITH_EDITLINE": "system",
    "WITH_PROTOBUF": "system",
}


def _is_profile_flag(flag: str) -> bool:
    return flag.startswith(("-fprofile-generate", "-fprofile-use"))


class MySQLTarget(MariaDBTarget):
    server = "mysql"
    server_program = "mysqld"
    build_tree_server = "runtime_output_directory/mysqld"
    PLUGIN_ENGINES = {}       # InnoDB and MyISAM are built in; MySQL has no MyRocks

    def distribution_build(self, tree, runner) -> DistributionBuild:
        raise PgolabError("Debian 12 has no MySQL server package for a drop-in build to replace (its mysql-9.7 "
                          "source comes from unstable)", hint="leave --distribution-options out for MySQL")

    def adapt_flags(self, variant: Variant, flags: FlagSet) -> FlagSet:
        """-flto and -fprofile-generate/-use come from WITH_LTO and FPROFILE_* instead;
        the rest (e.g. gcc's -fprofile-update, -fprofile-prefix-path) is still added."""
        keep = [f for f in flags.compile if not f.startswith("-flto") and not _is_profile_flag(f)]
        link = [f for f in flags.link if not f.startswith("-flto")]
        return replace(flags, compile=keep, link=link)

    def recipe_options(self, variant: Variant, tree: Path, profile_dir: Path | None,
                       like_distribution: bool = False) -> list[str]:
        opts = [f"-D{k}={v}" for k, v in MYSQL_CMAKE_OPTIONS.items()]
        # Always explicit: FPROFILE_USE turns WITH_LTO's default on.
        opts.append(f"-DWITH_LTO={'ON' if variant.lto else 'OFF'}")
        # MySQL's own prefix maps and no build timestamps (its FPROFILE_* turn it on too).
        opts.append("-DREPRODUCIBLE_BUILD=ON")
        if variant.pgo == "gen":
            opts += ["-DFPROFILE_GENERATE=ON", f"-DFPROFILE_DIR={profile_dir}"]
        elif variant.reads_profile:   # a _pgo_csgen build adds -fcs-profile-generate (kept by adapt_flags)
            opts += ["-DFPROFILE_USE=ON", f"-DFPROFILE_DIR={profile_dir}"]
        if (tree / "boost").is_dir():  # mysql-boost tarballs of 8.0 carry it
            opts.append(f"-DWITH_BOOST={tree / 'boost'}")
        if compiler_family(variant.compiler).links_with_lld:
            opts.append("-DUSE_LD_LLD=ON" if variant.pgo == "none" else "-DUSE_LD_LLD=OFF")
        return opts

    def build_targets(self, build_dir: Path) -> list[str]:
        return ["mysqld", "mysql", "mysqladmin"]

    def install(self, tree, build_dir, install_dir, runner, flags) -> None:
        shutil.rmtree(install_dir, ignore_errors=True)
        (install_dir / "bin").mkdir(parents=True)
        for name in ("mysqld", "mysql", "mysqladmin"):
            src = build_dir / "runtime_output_directory" / name
            if not src.exists():
                raise PgolabError(f"build produced no {name}", log=runner.log_path,
                                  hint="the build did not finish; run the same command again")
            shutil.copy2(src, install_dir / "bin" / name)
        share = build_dir / "share"
        if share.is_dir():
            shutil.copytree(share, install_dir / "share", symlinks=True)

    def server_binary(self, install_dir: Path) -> Path:
        return install_dir / "bin" / "mysqld"

    def installation(self, tree: Path, build_dir: Path, install_dir: Path) -> "MySQLInstallation":
        return MySQLInstallation(server_binary=self.server_binary(install_dir), bin_dir=install_dir / "bin",
                                 lc_messages_dir=install_dir / "share", install_db=[])


@dataclass
class MySQLInstallation(MariaDBInstallation):
    server: str = "mysql"
    PLUGIN_ENGINES = {}
    binary_name = "mysqld"

    @classmethod
    def from_binary(cls, path: Path) -> "MySQLInstallation":
        """A MySQL install tree's mysqld (pgolab's or a user's): it initialises its own data
        directory; messages come from the tree's share/ when there is one."""
        share = path.parent.parent / "share"
        return cls(server_binary=path, bin_dir=path.parent, install_db=[],
                   lc_messages_dir=share if share.is_dir() else None)

    def init_commands(self, datadir: Path, tmpdir: Path) -> list[Cmd]:
        argv = [str(self.server_binary), "--no-defaults", "--initialize-insecure", f"--datadir={datadir}",
                f"--tmpdir={tmpdir}"]
        if self.lc_messages_dir:
            argv.append(f"--lc-messages-dir={self.lc_messages_dir}")
        return [Cmd(argv + self.user_args(), what="mysqld --initialize-insecure")]

    def start_argv(self, datadir: Path, rundir: Path, options: list[str], config: Path | None = None) -> list[str]:
        # loose-: a server built without the X plugin (pgolab's) does not know the option.
        return super().start_argv(datadir, rundir, ["--loose-mysqlx=OFF", *options], config)

    def valgrind_options(self) -> list[str]:
        """No libaio under valgrind; MySQL has no --innodb-buffer-pool-size-max (MariaDB's)."""
        return ["--innodb-use-native-aio=0"]

    def _tool(self, name: str) -> str:
        name = {"mariadb": "mysql", "mariadb-admin": "mysqladmin"}.get(name, name)
        own = self.bin_dir / name
        return str(own) if own.exists() else (shutil.which(name) or name)

    def user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    ENGINE_HINTS = {"rocksdb": "MySQL has no MyRocks (use Percona Server or MariaDB); MySQL offers innodb and myisam",
                    "aria": "Aria is MariaDB's; MySQL offers innodb and myisam"}
