"""MariaDB: a minimal server build, and how to run one (built or Debian's)."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from .. import paths
from ..distribution import DistributionBuild, DroppedOption, require_packages, tree_debian_version
from ..errors import PgolabError
from ..runner import Runner
from ..variants import FlagSet, Variant
from ..mix import MixOptions, MySQLMix, engine_offered, engine_support_sql
from .base import (Cmd, CostEntry, PluginEngine, cmake_build_folder, cmake_flags_include, cmake_source_folder,
                   cmake_tool_args, plugin_engines)

# The one place that says what a pgolab MariaDB build leaves out. InnoDB, Aria
# and MyISAM stay; edit this list (or pass --cmake-arg) to change it.
MARIADB_CMAKE_OPTIONS: dict[str, str] = {
    "PLUGIN_ROCKSDB": "NO",
    "PLUGIN_MROONGA": "NO",
    "PLUGIN_SPIDER": "NO",
    "PLUGIN_CONNECT": "NO",
    "PLUGIN_S3": "NO",
    "PLUGIN_COLUMNSTORE": "NO",
    "PLUGIN_OQGRAPH": "NO",
    "PLUGIN_SPHINX": "NO",
    "PLUGIN_TOKUDB": "NO",
    "PLUGIN_AUTH_GSSAPI": "NO",
    "PLUGIN_AUTH_PAM": "NO",
    "WITH_UNIT_TESTS": "OFF",
    "WITH_EMBEDDED_SERVER": "OFF",
    "WITH_WSREP": "OFF",
    "WITH_MARIABACKUP": "OFF",
    # System libraries: the bundled PCRE is built as an external project with
    # flags of its own, which would not get pgolab's flags.
    "WITH_PCRE": "system",
    "WITH_SSL": "system",
    "WITH_ZLIB": "system",
}

# Options every MariaDB build takes, a build like Debian's too. DTrace probes: off, as in Debian's
# mariadbd (no stapsdt note); on by default wherever systemtap's dtrace is installed, whose probe
# object names its source after a hash of the build's paths and keeps the configuring process's
# folder in its debug information, so two homes' builds differed in those bytes
# (docs/results/mariadb-10.11-reproducible), and a machine without it would build another binary.
MARIADB_FIXED_OPTIONS: dict[str, str] = {"ENABLE_DTRACE": "OFF"}

# Engines a pgolab build leaves out and builds as plugins when asked (--engine). MyRocks refuses
# statement-based binary logging unless told it may.
MARIADB_PLUGIN_ENGINES = {
    "rocksdb": PluginEngine("rocksdb", "PLUGIN_ROCKSDB", "rocksdb", "storage/rocksdb/ha_rocksdb.so", "RocksDB",
                            training_options=("--loose-rocksdb-unsafe-for-binlog=ON",)),
}
# Where Debian's packages put server plugins (mariadb-plugin-rocksdb's ha_rocksdb.so among them).
SYSTEM_PLUGIN_DIR = Path("/usr/lib/mysql/plugin")
SYSTEM_SERVER = Path("/usr/sbin/mariadbd")

# The server, and what initialising and administering a data directory needs
# (the bootstrap SQL scripts are written by configure).
MARIADB_BUILD_TARGETS = ["mariadbd", "mariadb", "mariadb-admin", "my_print_defaults", "resolveip"]


# Debian's configure of mariadb-server, as its debian/rules runs it: make prints the rules' cmake
# line (make -n), debhelper the whole command with its own defaults (dh_auto_configure --no-act), and
# make the build flags the rules export (this target printed through make --eval).
PRINT_BUILD_FLAGS = ("pgolab-print-build-flags: ; @printf '%s\\n' 'CFLAGS=$(CFLAGS)' 'CXXFLAGS=$(CXXFLAGS)' "
                     "'LDFLAGS=$(LDFLAGS)'")
# Debian's options a drop-in build leaves out, each with why (keyed by the -D variable or word).
DEBIAN_DROPPED = {
    "CMAKE_BUILD_TYPE": "the variant's build type and optimisation",
    "-G": "the generator: pgolab's build sets it (make, as Debian's)",
}
# What each kept feature needs on the building machine: (a file that shows it, the package with it).
# mariadbd links these itself; Debian's service is Type=notify, so systemd's library too.
DEBIAN_FEATURE_PACKAGES = {
    "WITH_PMEM": ("/usr/include/libpmem.h", "libpmem-dev"),
    "WITH_URING": ("/usr/include/liburing.h", "liburing-dev"),
    "WITH_LIBAIO": ("/usr/include/libaio.h", "libaio-dev"),
    "WITH_INNODB_SNAPPY": ("/usr/include/snappy-c.h", "libsnappy-dev"),
    "WITH_NUMA": ("/usr/include/numa.h", "libnuma-dev"),
    "DEB": ("/usr/include/systemd/sd-daemon.h", "libsystemd-dev"),
}
# In the build flags, the variant decides optimisation, debug info and frame pointers, and pgolab's
# own prefix maps name the tree; Debian's hardening flags stay.
VARIANT_BUILD_FLAGS = ("-O", "-g", "-fno-omit-frame-pointer", "-fomit-frame-pointer", "-ffile-prefix-map=")


def dh_configure_args(dry_run: str) -> list[str]:
    """The arguments debian/rules gives dh_auto_configure after `--`, from `make -n`'s output."""
    joined = dry_run.replace("\\\n", " ")
    for line in joined.splitlines():
        words = shlex.split(line, comments=False) if "dh_auto_configure" in line else []
        if "dh_auto_configure" in words and "--" in words:
            return words[words.index("--") + 1:]
    raise PgolabError("debian/rules runs no dh_auto_configure with cmake options (make -n override_dh_auto_configure)",
                      hint="a drop-in build is made from Debian's source package: pgolab source mariadb")


def dh_cmake_argv(no_act: str) -> list[str]:
    """cmake's options from `dh_auto_configure --no-act`'s command (`cd builddir && cmake ... ..`)."""
    for line in no_act.splitlines():
        words = shlex.split(line.strip())
        if "cmake" in words:
            return [w for w in words[words.index("cmake") + 1:] if w != ".."]
    raise PgolabError("dh_auto_configure --no-act printed no cmake command", hint="apt-get install debhelper")


def debian_cmake_options(argv: list[str], build_flags: dict[str, str]) -> tuple[list[str], list[DroppedOption]]:
    """Debian's cmake options and build flags as a drop-in build's cmake arguments: Debian's own
    -D options (its paths, layout, features, version suffix and comments), its hardening flags as
    CMake's flags (pgolab adds the variant's after the build type's), and what is left out with why."""
    kept, dropped = [], []
    for arg in argv:
        name = arg[2:].split("=", 1)[0].split(":", 1)[0] if arg.startswith("-D") else arg[:2]
        if name in DEBIAN_DROPPED:
            dropped.append(DroppedOption(arg, DEBIAN_DROPPED[name]))
        else:
            kept.append(arg)
    variant_words = set()
    for var, cmake_vars in (("CFLAGS", ["CMAKE_C_FLAGS"]), ("CXXFLAGS", ["CMAKE_CXX_FLAGS"]),
                            ("LDFLAGS", ["CMAKE_EXE_LINKER_FLAGS", "CMAKE_SHARED_LINKER_FLAGS",
                                         "CMAKE_MODULE_LINKER_FLAGS"])):
        words = build_flags.get(var, "").split()
        variant_words |= {w for w in words if w.startswith(VARIANT_BUILD_FLAGS)}
        kept += [f"-D{c}=" + " ".join(w for w in words if not w.startswith(VARIANT_BUILD_FLAGS)) for c in cmake_vars]
    if variant_words:
        dropped.append(DroppedOption(f"build flags: {' '.join(sorted(variant_words))}",
                                     "the variant's optimisation, debug info and frame pointers; pgolab's own "
                                     "prefix maps"))
    return kept, dropped


# One process with a thread per connection (the build's _order refusal and the installation's counting read it).
FORKS_BACKENDS = False


class MariaDBTarget:
    server = "mariadb"
    server_program = "mariadbd"
    forks_backends = FORKS_BACKENDS
    build_tree_server = "sql/mariadbd"     # where a CMake build folder has the server
    PLUGIN_ENGINES = MARIADB_PLUGIN_ENGINES

    def __init__(self, engines: tuple[PluginEngine, ...] = ()):
        self.engines = engines      # plugin engines this build makes beside the server

    def with_engines(self, names) -> "MariaDBTarget":
        """This recipe, building these plugin engines too."""
        return type(self)(plugin_engines(self.PLUGIN_ENGINES, names, self.server))

    def installed_tree(self, install_dir: Path) -> Path:
        """Everything the install wrote."""
        return install_dir

    def distribution_build(self, tree, runner: Runner) -> DistributionBuild:
        """Debian's own cmake options for mariadb-server, read from the tree's debian/rules by make and
        debhelper (the package's build, not a guess), and its build flags' hardening."""
        rules = tree.path / "debian" / "rules"
        if not rules.is_file():
            raise PgolabError(f"{tree.path} has no debian/rules to read Debian's cmake options from",
                              hint="a drop-in build is made from Debian's source package: pgolab source mariadb")
        require_packages({"/usr/bin/dh_auto_configure": "debhelper", "/usr/bin/lsb_release": "lsb-release"},
                         runner, "reading debian/rules")
        version = tree_debian_version(tree.path)
        # The rules make a temporary file as they are read (mktemp): it goes to a folder of pgolab's own.
        scratch_dir = paths.home() / "work" / "debian-rules"
        scratch_dir.mkdir(parents=True, exist_ok=True)
        env = {"TMPDIR": str(scratch_dir)}
        dry = runner.run(["make", "-n", "-f", "debian/rules", "override_dh_auto_configure"], cwd=tree.path, env=env,
                         what="make -n override_dh_auto_configure").output
        no_act = runner.run(["dh_auto_configure", "--no-act", "--builddirectory=builddir", "--", *dh_configure_args(dry)],
                            cwd=tree.path, env=env, what="dh_auto_configure --no-act").output
        flags = runner.run(["make", "-s", "-f", "debian/rules", "--eval", PRINT_BUILD_FLAGS, "pgolab-print-build-flags"],
                           cwd=tree.path, env=env, what="debian/rules' build flags").output
        shutil.rmtree(scratch_dir, ignore_errors=True)
        build_flags = dict(line.split("=", 1) for line in flags.splitlines() if "=" in line)
        kept, dropped = debian_cmake_options(dh_cmake_argv(no_act), build_flags)
        names = {a[2:].split("=", 1)[0].split(":", 1)[0] for a in kept if a.startswith("-D")}
        require_packages({file: pkg for option, (file, pkg) in DEBIAN_FEATURE_PACKAGES.items() if option in names},
                         runner, f"MariaDB {tree.version} configured like mariadb-server")
        return DistributionBuild(package="mariadb-server-core", version=version, server_path="/usr/sbin/mariadbd",
                                 configure_args=tuple(kept), dropped=tuple(dropped),
                                 read_from="debian/rules (make -n override_dh_auto_configure; dh_auto_configure "
                                           "--no-act; the rules' build flags)")

    def adapt_flags(self, variant: Variant, flags: FlagSet) -> FlagSet:
        """Flags this recipe passes as given (MySQL swaps some for its own options)."""
        return flags

    def configure(self, tree: Path, build_dir: Path, toolchain, flags: FlagSet, variant: Variant,
                  extra_args: list[str], use_ccache: bool, profile_dir: Path | None = None,
                  like_distribution: bool = False) -> list[Cmd]:
        include = build_dir / "pgolab-flags.cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        if like_distribution:
            # Debian's configuration builds wsrep-lib, which turns -g on for its own objects.
            flags = replace(flags, compile=[*flags.compile, *toolchain.family.debug_version_flags])
        include.write_text(cmake_flags_include(flags))
        # Debian's packages build with make: with Debian's layout, Connector/C declares its static
        # library twice (the library and a symlink of the same name), which Ninja refuses.
        generator = "Unix Makefiles" if like_distribution else "Ninja"
        argv = ["cmake", "-S", str(tree), "-B", str(build_dir), "-G", generator,
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DCMAKE_C_COMPILER={toolchain.cc}", f"-DCMAKE_CXX_COMPILER={toolchain.cxx}",
                f"-DCMAKE_PROJECT_INCLUDE={include}"]
        argv += cmake_tool_args(flags)
        argv += self.recipe_options(variant, tree, profile_dir, like_distribution)
        if use_ccache and shutil.which("ccache"):
            argv += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        argv += extra_args + [f"-D{k}={v}" for k, v in MARIADB_FIXED_OPTIONS.items()] + self.engine_configure_args()
        return [Cmd(argv, what="cmake configure")]

    def recipe_options(self, variant: Variant, tree: Path, profile_dir: Path | None,
                       like_distribution: bool = False) -> list[str]:
        # A build like Debian's takes Debian's line whole (in extra_args): pgolab's smaller build would
        # leave out what Debian's mariadbd has (Galera's wsrep, for one). Only the server's targets
        # are built either way, so the plugins Debian packages apart cost configure time only.
        return [] if like_distribution else [f"-D{k}={v}" for k, v in MARIADB_CMAKE_OPTIONS.items()]

    def engine_configure_args(self) -> list[str]:
        """The plugin engines asked for: last on the line, so that no other option turns them off."""
        return [f"-D{e.cmake_option}=DYNAMIC" for e in self.engines]

    def build(self, build_dir: Path, jobs: int, flags: FlagSet) -> list[Cmd]:
        # Through cmake, whichever generator configured the folder (Ninja, or make for a build like Debian's).
        return [Cmd(["cmake", "--build", str(build_dir), "--parallel", str(jobs), "--target",
                     *self.build_targets(build_dir)], what="cmake --build")]

    def build_targets(self, build_dir: Path) -> list[str]:
        return MARIADB_BUILD_TARGETS + [e.build_target for e in self.engines]

    def install(self, tree: Path, build_dir: Path, install_dir: Path, runner: Runner,
                flags: FlagSet) -> None:
        """A small relocatable tree: bin/ with the server and its tools, share/ with messages."""
        shutil.rmtree(install_dir, ignore_errors=True)
        (install_dir / "bin").mkdir(parents=True)
        programs = {"sql/mariadbd": "mariadbd", "client/mariadb": "mariadb",
                    "client/mariadb-admin": "mariadb-admin", "extra/my_print_defaults": "my_print_defaults",
                    "extra/resolveip": "resolveip"}
        for rel, name in programs.items():
            src = build_dir / rel
            if not src.exists():
                raise PgolabError(f"build produced no {rel}", log=runner.log_path,
                                  hint="the build did not finish; run the same command again")
            shutil.copy2(src, install_dir / "bin" / name)
        if self.engines:
            (install_dir / "lib" / "plugin").mkdir(parents=True)
        for engine in self.engines:
            shutil.copy2(build_dir / engine.library, install_dir / "lib" / "plugin" / engine.file_name)
        # The messages, not cmake's files for that folder (they name the build's paths).
        shutil.copytree(build_dir / "sql" / "share", install_dir / "share", symlinks=True,
                        ignore=shutil.ignore_patterns("cmake_install.cmake", "CMakeFiles", "Makefile", "*.ninja"))
        (install_dir / "pgolab-source").write_text(f"{tree}\n{build_dir}\n")

    features_compared = "options and variables (mariadbd --no-defaults --help --verbose)"
    tarball_setup = None        # a binary tarball needs the whole install, which pgolab's build does not make

    def feature_names(self, binary: Path, installation, runner: Runner) -> set[str]:
        """What a server binary offers, to compare a build with the distribution's: the options and
        variables its help lists (the compiled-in plugins' among them: wsrep's, InnoDB's, ...)."""
        done = runner.run([str(binary), "--no-defaults", "--help", "--verbose", *installation.user_args()],
                          what=f"{binary.name} --help --verbose", log_output=False)
        lines = done.output.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("Variables (--variable-name=value)")), None)
        if start is None:
            raise PgolabError(f"{binary} --help --verbose printed no table of variables", log=runner.log_path,
                              hint="run it by hand to see why it does not start")
        names = set()
        for line in lines[start + 3:]:
            if not line.strip():
                break
            names.add(line.split()[0])
        return names

    def undefined_in_source(self, tree: Path, names: set[str]) -> set[str]:
        """Of these option names, those whose name (or, for a plugin's, the part after its prefix) no
        source file of the server or its storage engines and plugins mentions."""
        wanted = {n: {n.replace("-", "_"), n.split("-", 1)[-1].replace("-", "_")} for n in names}
        found = set()
        for folder in ("sql", "storage", "plugin", "wsrep-lib"):
            for path in (tree / folder).rglob("*.c*"):
                text = path.read_text(errors="replace") if path.suffix in (".c", ".cc", ".cpp") else ""
                found |= {n for n, forms in wanted.items() if n not in found and any(f in text for f in forms)}
        return set(names) - found

    def server_binary(self, install_dir: Path) -> Path:
        return install_dir / "bin" / "mariadbd"

    def installation(self, tree: Path, build_dir: Path, install_dir: Path) -> "MariaDBInstallation":
        return MariaDBInstallation(server_binary=self.server_binary(install_dir),
                                   bin_dir=install_dir / "bin",
                                   lc_messages_dir=install_dir / "share",
                                   install_db=build_tree_install_db(tree, build_dir),
                                   plugin_dir=install_dir / "lib" / "plugin")


def build_tree_install_db(tree: Path, build_dir: Path) -> list[str]:
    """mariadb-install-db as configured into a build folder: it bootstraps that folder's mariadbd with
    the tree's SQL scripts."""
    return [str(build_dir / "scripts" / "mariadb-install-db"), f"--srcdir={tree}", f"--builddir={build_dir}"]


@dataclass
class MariaDBInstallation:
    """A runnable mariadbd with the tools to initialise and stop it."""

    server_binary: Path
    bin_dir: Path
    lc_messages_dir: Path | None
    install_db: list[str]
    # Its plugins (a pgolab build's own, made with --engine; Debian's); None: the server's compiled-in default.
    plugin_dir: Path | None = None
    server: str = "mariadb"
    PLUGIN_ENGINES = MARIADB_PLUGIN_ENGINES
    run_as: str | None = None   # mariadbd runs as root with --user=root
    # Cost mode counts only statement execution: callgrind collects inside these functions.
    cost_entry_points: tuple[CostEntry, ...] = (CostEntry("dispatch_command(*)"),
                                                 CostEntry("do_command(*)"))
    forks_backends: bool = FORKS_BACKENDS     # one process: counters are zeroed and dumped around a run
    data_version_parts: int = 2               # 10.11.x share a data directory format; 11.8 is another
    cost_repeatability: float = 0.005         # A/A read-only instructions agreed within 0.1 % here
    after_load_sql: tuple[str, ...] = ()      # run once on freshly loaded benchmark data: nothing needed
    binary_name = "mariadbd"                  # how --binary NAME=PATH recognises this server
    sysbench_driver = "mysql"                 # servers of one driver can share a run (MariaDB and MySQL)
    logs_to_stderr = False                    # mariadbd and mysqld write their own --log-error file

    @classmethod
    def system(cls, binary: Path = SYSTEM_SERVER) -> "MariaDBInstallation":
        """Debian's packaged server."""
        if not binary.exists():
            raise PgolabError(f"{binary} not found", hint="apt-get install mariadb-server")
        return cls(server_binary=binary, bin_dir=Path("/usr/bin"), lc_messages_dir=None,
                   install_db=["/usr/bin/mariadb-install-db", "--basedir=/usr"], plugin_dir=SYSTEM_PLUGIN_DIR)

    @classmethod
    def from_binary(cls, path: Path) -> "MariaDBInstallation":
        """Any mariadbd: Debian's, a pgolab install tree's (e.g. an A/A copy of a build), a user's
        install tree or CMake build folder. The client tools beside it if it has them, else Debian's;
        messages from its tree's share/."""
        build = cmake_build_folder(path, MariaDBTarget.build_tree_server)
        if build is not None:
            source = cmake_source_folder(build)
            return cls(server_binary=path, bin_dir=build / "client", lc_messages_dir=build / "sql" / "share",
                       install_db=build_tree_install_db(source, build))
        installation = cls.system(path)
        installation.bin_dir = path.parent if (path.parent / "mariadb").exists() else Path("/usr/bin")
        share = path.parent.parent / "share"
        if (share / "english" / "errmsg.sys").exists():
            installation.lc_messages_dir = share
        # Its install tree's plugins (pgolab's, a binary tarball's); Debian's only for Debian's server.
        plugins = path.parent.parent / "lib" / "plugin"
        installation.plugin_dir = plugins if plugins.is_dir() else \
            SYSTEM_PLUGIN_DIR if path.resolve() == SYSTEM_SERVER.resolve() else None
        return installation

    def with_server_binary(self, binary: Path) -> "MariaDBInstallation":
        return replace(self, server_binary=binary)

    def _tool(self, name: str) -> str:
        own = self.bin_dir / name
        return str(own) if own.exists() else (shutil.which(name) or name)

    def user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def init_commands(self, datadir: Path, tmpdir: Path) -> list[Cmd]:
        # mariadb-install-db passes options it does not know (--tmpdir) on to the server.
        return [Cmd([*self.install_db, "--no-defaults", f"--datadir={datadir}", f"--tmpdir={tmpdir}",
                     "--auth-root-authentication-method=normal", "--skip-test-db",
                     "--skip-name-resolve", *self.user_args()], what="mariadb-install-db")]

    def start_argv(self, datadir: Path, rundir: Path, options: list[str], config: Path | None = None) -> list[str]:
        # A user's config file replaces --no-defaults; pgolab's own options still follow it.
        defaults = f"--defaults-file={config}" if config else "--no-defaults"
        argv = [str(self.server_binary), defaults, f"--datadir={datadir}",
                f"--socket={self.socket(rundir)}", "--skip-networking",
                f"--pid-file={rundir / 'server.pid'}", f"--log-error={self.error_log(rundir)}",
                f"--tmpdir={rundir}",   # private: temporary tables never meet another process's /tmp
                "--innodb-buffer-pool-size=512M", *self.user_args()]
        if self.lc_messages_dir:
            argv.append(f"--lc-messages-dir={self.lc_messages_dir}")
        if self.plugin_dir and self.plugin_dir != SYSTEM_PLUGIN_DIR and self.plugin_dir.is_dir():
            argv.append(f"--plugin-dir={self.plugin_dir}")
        return argv + options

    def plugin_engines(self) -> list[PluginEngine]:
        """The plugin engines this server can load: those whose plugin file its plugin folder has."""
        return [e for e in self.PLUGIN_ENGINES.values()
                if self.plugin_dir and (self.plugin_dir / e.file_name).is_file()]

    def engine_options(self, engine: str) -> list[str]:
        """What the server starts with so that its tables can be of this engine: a plugin engine is
        loaded (a built-in one needs nothing)."""
        return [e.load_option for e in self.plugin_engines() if e.name == engine]

    def valgrind_options(self) -> list[str]:
        """Under valgrind: no io_uring/libaio (InnoDB hangs at start), and a buffer pool whose
        maximum is its size (the default reserves terabytes of address space)."""
        return ["--innodb-use-native-aio=0", "--innodb-buffer-pool-size-max=512M"]

    def socket(self, rundir: Path) -> Path:
        return rundir / "mysqld.sock"

    def error_log(self, rundir: Path) -> Path:
        return rundir / "error.log"

    def plugin_options(self) -> list[str]:
        """A training server loads every plugin engine it has (the mix gives each tables of its own)."""
        return [o for e in self.plugin_engines() for o in (e.load_option, *e.training_options)]

    def training_options(self, datadir: Path) -> list[str]:
        """The training mix covers binary log formats, so the training server logs binlogs."""
        return [f"--log-bin={datadir}/pgolab-binlog", "--server-id=1"]

    def training_mix(self, rundir: Path, options: MixOptions) -> MySQLMix:
        return MySQLMix(str(self.socket(rundir)), options, server=self.server,
                        extra_engines=tuple(e.table_engine for e in self.plugin_engines()))

    def client_argv(self, rundir: Path, sql: str, database: str | None = None) -> list[str]:
        argv = [self._tool("mariadb"), "--no-defaults", f"--socket={self.socket(rundir)}", "-uroot",
                "--batch", "--skip-column-names", "-e", sql]
        return argv + ([database] if database else [])

    def shutdown_argv(self, rundir: Path, datadir: Path) -> list[str]:
        return self.client_argv(rundir, "SHUTDOWN")

    def create_database_sql(self, name: str) -> str:
        return f"CREATE DATABASE IF NOT EXISTS {name}"

    def database_exists_sql(self, name: str) -> str:
        return f"SELECT 1 FROM information_schema.schemata WHERE schema_name = '{name}'"

    def sysbench_args(self, rundir: Path, database: str) -> list[str]:
        return [f"--db-driver={self.sysbench_driver}", f"--mysql-socket={self.socket(rundir)}", "--mysql-user=root",
                f"--mysql-db={database}"]

    def version_sql(self) -> str:
        return "SELECT VERSION()"

    # What adds an engine this server lacks: MariaDB builds MyRocks as a plugin (Debian packages it).
    ENGINE_HINTS = {"rocksdb": "build it in with `pgolab build --engine rocksdb` (MyRocks as a plugin); for Debian's "
                               "mariadbd, apt-get install mariadb-plugin-rocksdb",
                    "aria": "build with -DPLUGIN_ARIA=YES (MariaDB's default)"}

    def engine_load_args(self, engine: str) -> list[str]:
        """sysbench's prepare creates the tables in this storage engine."""
        return [f"--mysql-storage-engine={engine}"]

    def engine_missing(self, server, engine: str) -> str | None:
        """None if the running server offers the engine, else what adds it."""
        support = server.query(engine_support_sql(engine), what=f"look for storage engine {engine}")
        if engine_offered(support):
            return None
        return self.ENGINE_HINTS.get(engine.lower(), f"build {self.server} with the {engine} storage engine")
