"""PostgreSQL: an autoconf (VPATH) build, and how to run one."""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from .. import reproducible
from ..distribution import DistributionBuild, DroppedOption, installed_version, require_packages, tree_debian_version
from ..errors import PgolabError
from ..layout import tree_folder_of
from ..runner import Runner
from ..sources import SourceTree
from ..variants import FlagSet, Variant
from ..mix import MixOptions, PostgreSQLMix
from .base import Cmd, CostEntry, plugin_engines, unprivileged_user

POSTGRESQL_CONFIGURE_OPTIONS = ["--without-icu", "--without-readline", "--without-llvm"]

# The prefix every build is configured for, whatever its folder: postgres compiles it in (and the
# configure line, for the pg_config view), so a folder of this machine's would make two homes' builds
# differ. PostgreSQL finds its share and lib folders relative to its binary, so the tree installed
# elsewhere runs as it is. "postgresql" in it keeps share/ without a subfolder, as before.
INSTALL_PREFIX = "/pgolab/postgresql"

# What pgolab builds and installs: the server and what initialising, running and
# querying a cluster needs (not ecpg, the other client programs or the test tools).
# Each is `make -C <dir>` and then `make -C <dir> install`, in this order.
POSTGRESQL_MAKE_DIRS = [
    "src/backend",
    "src/backend/utils/mb/conversion_procs",
    "src/backend/snowball",
    "src/pl/plpgsql",
    "src/timezone",
    "src/interfaces/libpq",
    "src/bin/initdb",
    "src/bin/pg_ctl",
    "src/bin/psql",
]


# Debian's configure options for its server package that a drop-in build leaves out: each builds
# something other than the server binary, or is the variant's to decide. Keyed by the option's name.
_JIT = ("the JIT provider (llvmjit.so) is a library of its own: the package's stays installed "
        "and the new server loads it")
DEBIAN_DROPPED = {
    "--with-tcl": "PL/Tcl is a package of its own (postgresql-pltcl-MAJOR), not part of the server binary",
    "--with-perl": "PL/Perl is a package of its own (postgresql-plperl-MAJOR), not part of the server binary",
    "--with-python": "PL/Python is a package of its own (postgresql-plpython3-MAJOR), not part of the server binary",
    "PYTHON": "PL/Python's interpreter (see --with-python)",
    "--enable-tap-tests": "the regression tests' option",
    "PROVE": "the regression tests' tool",
    "--with-llvm": _JIT, "LLVM_CONFIG": _JIT, "CLANG": _JIT,
    "--with-extra-version": "replaced by the built tree's own Debian version: pg_ctl and initdb refuse a "
                            "server whose version string differs from theirs in one character",
}
# What each kept feature needs on the building machine: (a file that shows it, the package with it).
DEBIAN_FEATURE_PACKAGES = {
    "--with-openssl": ("/usr/include/openssl/ssl.h", "libssl-dev"),
    "--with-pam": ("/usr/include/security/pam_appl.h", "libpam0g-dev"),
    "--with-libxml": ("/usr/include/libxml2/libxml/parser.h", "libxml2-dev"),
    "--with-libxslt": ("/usr/include/libxslt/xslt.h", "libxslt1-dev"),
    "--with-gssapi": ("/usr/include/gssapi/gssapi.h", "libkrb5-dev"),
    "--with-ldap": ("/usr/include/ldap.h", "libldap-dev"),
    "--with-icu": ("/usr/include/unicode/ucol.h", "libicu-dev"),
    "--with-lz4": ("/usr/include/lz4.h", "liblz4-dev"),
    "--with-zstd": ("/usr/include/zstd.h", "libzstd-dev"),
    "--with-systemd": ("/usr/include/systemd/sd-daemon.h", "libsystemd-dev"),
    "--with-selinux": ("/usr/include/selinux/label.h", "libselinux1-dev"),
    "--with-uuid": ("/usr/include/uuid/uuid.h", "uuid-dev"),
    "--enable-dtrace": ("/usr/bin/dtrace", "systemtap-sdt-dev"),
    "--enable-nls": ("/usr/bin/msgfmt", "gettext"),
}
# In CFLAGS and CXXFLAGS, the variant decides optimisation and frame pointers; Debian's hardening
# flags stay. (Given CFLAGS, configure adds no -O2 of its own: every variant's flags carry one.)
VARIANT_CFLAGS = ("-O", "-fno-omit-frame-pointer", "-fomit-frame-pointer")


def debian_configure(recorded: list[str], debian_version: str, configure_text: str) -> tuple[list[str], list[DroppedOption]]:
    """Debian's recorded configure line (pg_config --configure, split) as a drop-in build's options,
    for a tree whose configure script is `configure_text`."""
    kept, dropped = [], []
    for arg in recorded:
        name = arg.split("=", 1)[0]
        if name in DEBIAN_DROPPED:
            dropped.append(DroppedOption(arg, DEBIAN_DROPPED[name]))
        elif name.startswith("--") and not name.startswith(("--with", "--enable", "--disable")) \
                and name not in configure_text:
            # Debian regenerates configure with a newer autoconf (--runstatedir came with 2.70); the
            # tree's own script refuses an option it does not know, even with option checking off.
            dropped.append(DroppedOption(arg, "this tree's configure script does not know it (Debian's regenerated one does)"))
        elif name in ("CFLAGS", "CXXFLAGS"):
            words = arg.split("=", 1)[1].split()
            variant_words = [w for w in words if w.startswith(VARIANT_CFLAGS)]
            kept.append(f"{name}=" + " ".join(w for w in words if w not in variant_words))
            if variant_words:
                dropped.append(DroppedOption(f"{name}: {' '.join(variant_words)}",
                                             "the variant's optimisation and frame pointers"))
        else:
            kept.append(arg)
    kept.append(f"--with-extra-version= (Debian {debian_version})")
    return kept, dropped


def copt(flags: FlagSet) -> str:
    """PostgreSQL's COPT is appended to both CFLAGS and LDFLAGS by its makefiles:
    the way to add flags without replacing configure's own (-O2 -g and warnings)."""
    return " ".join(flags.compile + flags.link)


# postgres records its link flags for pg_config (src/common's STD_LDFLAGS, as VAL_LDFLAGS), and COPT
# is among them, so the prefix maps would put this machine's folders into the binary. src/common's
# makefile already leaves them out of the recorded CFLAGS; this does the same for the link flags.
# Passed on make's command line, the value replaces the makefile's and is expanded by make there.
RECORDED_LDFLAGS = ("STD_LDFLAGS=$(filter-out -ffile-prefix-map=% -fdebug-prefix-map=% -fmacro-prefix-map=% "
                    "-L$(top_builddir)/src/common -L$(top_builddir)/src/port,$(LDFLAGS))")


# postgres records its flags, COPT among them, as make reads src/common's makefile (pg_config's CFLAGS
# and LDFLAGS: simple variables, expanded while parsing). A PGO build's flags name folders of its tree's
# builds (-fprofile-use=, gcc's -fprofile-prefix-path=), under pgolab's home and named by the tree's
# file times, so two homes' or two machines' builds would differ in those strings alone. COPT names
# that folder through a make variable that reads as a fixed stand-in while makefiles are parsed (what
# is recorded) and as the real folder in every recipe (what compiles and links): two --eval options,
# which make passes down to its sub-makes.
FOLDER_VARIABLE = "PGOLAB_TREE_BUILDS"


def folder_variable_evals(folder: Path) -> list[str]:
    return [f"--eval={FOLDER_VARIABLE} := {reproducible.BUILDS_STANDIN}", f"--eval=%: {FOLDER_VARIABLE} := {folder}"]


# pgolab's own objects (FlagSet.objects, _hugetext's) reach every link through COPT as a make variable
# that is empty while makefiles are parsed and names them in recipes: postgres records no file that
# exists only in the build (pg_config --ldflags would hand it to whatever links against the server).
OBJECTS_VARIABLE = "PGOLAB_OBJECTS"


def objects_variable_evals(objects: list[str]) -> list[str]:
    return [f"--eval={OBJECTS_VARIABLE} :=", f"--eval=%: {OBJECTS_VARIABLE} := {' '.join(objects)}"] if objects else []


def folder_by_variable(text: str, folder: Path) -> str:
    """Every path under `folder` in `text` (a flag's value, or a word) spelt through the make variable."""
    return re.sub(rf"(?<![^\s=,]){re.escape(str(folder))}(?=/)", f"$({FOLDER_VARIABLE})", text)


def install_dirs(tree: Path) -> list[str]:
    """PostgreSQL 16 moved postgres.bki (initdb's catalog) from src/backend/catalog's install to
    src/include/catalog's; without it a 17 install cannot initialise a data directory. That install
    also copies headers into folders src/include's install makes, so it runs through src/include."""
    catalog = tree / "src/include/catalog/Makefile"
    moved = catalog.is_file() and "$(INSTALL_DATA) postgres.bki" in catalog.read_text(errors="replace")
    return POSTGRESQL_MAKE_DIRS + (["src/include"] if moved else [])


# A binary tarball's setup-datadir: initialises a data directory as an unprivileged user.
TARBALL_SETUP = """#!/bin/sh
# Initialises a data directory for this server, as an unprivileged user (postgres refuses root):
#   {setup} DATADIR
# then start it with:  {bindir}/pg_ctl -D DATADIR -l DATADIR/server.log start
set -e
[ $# = 1 ] || {{ echo "usage: $0 DATADIR" >&2; exit 2; }}
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/{bindir}/initdb" -D "$1" -E UTF8 --locale=C
"""


# A backend process per connection (the build's _order refusal and the installation's counting read it).
FORKS_BACKENDS = True


class PostgreSQLTarget:
    server = "postgresql"
    forks_backends = FORKS_BACKENDS
    server_program = "postgres"
    PLUGIN_ENGINES = {}       # one table storage (heap) here

    def with_engines(self, names) -> "PostgreSQLTarget":
        plugin_engines(self.PLUGIN_ENGINES, names, self.server)     # refuses every name
        return self

    def adapt_flags(self, variant: Variant, flags: FlagSet) -> FlagSet:
        """configure's own optimisation is -O2; `rel` (Release) means -O3, added in front
        so that o2nofp's later -O2 still wins."""
        if variant.o2nofp:
            return flags
        return replace(flags, compile=["-O3", *flags.compile])

    def configure(self, tree: Path, build_dir: Path, toolchain, flags: FlagSet, variant: Variant,
                  extra_args: list[str], use_ccache: bool, profile_dir: Path | None = None,
                  like_distribution: bool = False) -> list[Cmd]:
        # Like Debian's or not, the three options stay: Debian's line turns ICU back on after them, its
        # JIT provider is left out anyway, and readline is psql's, not the server's.
        build_dir.mkdir(parents=True, exist_ok=True)
        cc = toolchain.cc
        if use_ccache and shutil.which("ccache"):
            cc = f"ccache {cc}"
        argv = [str(tree / "configure"), f"--prefix={INSTALL_PREFIX}",
                *POSTGRESQL_CONFIGURE_OPTIONS, *extra_args, f"CC={cc}"]
        for key in ("AR", "RANLIB"):
            if key in flags.tools:
                argv.append(f"{key}={flags.tools[key]}")
        return [Cmd(argv, cwd=build_dir, what="configure")]

    def make_vars(self, flags: FlagSet, build_dir: Path) -> list[str]:
        folder = tree_folder_of(build_dir)
        objects = flags.object_link_flags()
        flags = replace(flags, link=[f for f in flags.link if f not in objects])
        make_vars = [f"COPT={folder_by_variable(copt(flags), folder)}" + (f" $({OBJECTS_VARIABLE})" if objects else ""),
                     *folder_variable_evals(folder), *objects_variable_evals(objects), RECORDED_LDFLAGS]
        for key in ("AR", "RANLIB"):
            if key in flags.tools:
                make_vars.append(f"{key}={flags.tools[key]}")
        if any(f.startswith("-fprofile-generate") for f in flags.compile):
            # libpq's check that nothing calls exit() trips on the profiling runtime's
            # own exit handling; PostgreSQL skips that check for coverage builds.
            make_vars.append("enable_coverage=yes")
        return make_vars

    def build(self, build_dir: Path, jobs: int, flags: FlagSet) -> list[Cmd]:
        # The top-level makefile makes the generated headers before any subdirectory; building
        # src/backend directly in parallel can otherwise compile before lwlocknames.h exists.
        headers = Cmd(["make", "-C", str(build_dir / "src/backend"), "generated-headers", *self.make_vars(flags, build_dir)],
                      what="make generated-headers")
        # The backend links src/port's and src/common's libraries but, made in parallel on its own,
        # may reach its link before they exist ("No rule to make target libpgcommon_srv.a", seen with
        # PostgreSQL 17): they are made first, as the top-level makefile does.
        return [headers] + [Cmd(["make", "-C", str(build_dir / d), f"-j{jobs}", *self.make_vars(flags, build_dir)],
                                what=f"make {d}") for d in ["src/port", "src/common", *POSTGRESQL_MAKE_DIRS]]

    def install(self, tree: Path, build_dir: Path, install_dir: Path, runner: Runner,
                flags: FlagSet) -> None:
        """Into a staging folder through DESTDIR, then moved to install_dir: the binaries find their
        files relative to where they are. A build configured for INSTALL_PREFIX moves that folder. One
        configured like Debian's package spreads over /usr (bin under /usr/lib/postgresql/MAJOR, share
        under /usr/share/postgresql/MAJOR): the whole staged root is kept beside install_dir, which
        links to the folder holding bin/, so that the server still finds share/ from where it is."""
        install_root = install_dir.with_name("root")
        if install_dir.is_symlink():
            install_dir.unlink()
        for old in (install_dir, install_root):
            shutil.rmtree(old, ignore_errors=True)
        staging = install_dir.with_name(install_dir.name + ".staging")
        shutil.rmtree(staging, ignore_errors=True)
        for d in install_dirs(tree):
            runner.run(["make", "-C", str(build_dir / d), "install", f"DESTDIR={staging}", *self.make_vars(flags, build_dir)],
                       what=f"make install ({d})")
        if (staging / INSTALL_PREFIX.lstrip("/")).is_dir():
            (staging / INSTALL_PREFIX.lstrip("/")).rename(install_dir)
            shutil.rmtree(staging)
            return
        servers = list(staging.glob("**/bin/postgres"))
        if len(servers) != 1:
            raise PgolabError(f"make install put {len(servers)} bin/postgres under {staging}",
                              hint="see the install log; remove the build folder and build again")
        staging.rename(install_root)
        # A relative link: the build folder can move (a copied home) and the link still holds.
        install_dir.symlink_to(Path(install_root.name) / servers[0].parent.parent.relative_to(staging))

    def installed_tree(self, install_dir: Path) -> Path:
        """Everything make install wrote: install_dir itself, or the staged root it links into."""
        return install_dir.with_name("root") if install_dir.is_symlink() else install_dir

    def distribution_build(self, tree: SourceTree, runner: Runner) -> DistributionBuild:
        """Debian's own configure options for postgresql-MAJOR, read from the configure line its
        pg_config recorded (the package's build, not a guess), kept where they shape the server."""
        major = tree.version.split(".")[0]
        package, client = f"postgresql-{major}", f"postgresql-client-{major}"
        pg_config = Path(f"/usr/lib/postgresql/{major}/bin/pg_config")
        if not pg_config.exists():
            raise PgolabError(f"{pg_config} not found: Debian's configure options for {package} are read from it",
                              hint=f"apt-get install {client}")
        recorded = shlex.split(runner.run([str(pg_config), "--configure"], what="pg_config --configure").output)
        version = tree_debian_version(tree.path)
        kept, dropped = debian_configure(recorded, version, (tree.path / "configure").read_text(errors="replace"))
        dropped = [replace(d, why=d.why.replace("MAJOR", major)) for d in dropped]
        names = {arg.split("=", 1)[0] for arg in kept}
        require_packages({file: pkg for option, (file, pkg) in DEBIAN_FEATURE_PACKAGES.items() if option in names},
                         runner, f"PostgreSQL {major} configured like {package}")
        return DistributionBuild(
            package=package, version=version, server_path=f"/usr/lib/postgresql/{major}/bin/postgres",
            configure_args=tuple(kept), dropped=tuple(dropped),
            read_from=f"{pg_config} --configure ({client} {installed_version(client, runner) or 'version unknown'})")

    features_compared = "configuration parameters (postgres --describe-config)"

    def feature_names(self, binary: Path, installation, runner: Runner) -> set[str]:
        """What a server binary offers, to compare a build with the distribution's: its parameters."""
        done = runner.run([str(binary), "--describe-config"], user=installation.run_as,
                          what="postgres --describe-config", log_output=False)
        return {line.split("\t", 1)[0] for line in done.output.splitlines() if "\t" in line}

    def undefined_in_source(self, tree: Path, names: set[str]) -> set[str]:
        """Of these parameter names, those the tree's GUC tables never define."""
        source = "\n".join(p.read_text(errors="replace") for p in (tree / "src/backend/utils/misc").glob("guc*.c"))
        return {n for n in names if f'"{n}"' not in source}

    def tarball_setup(self, name: str, bindir: Path) -> tuple[str, list[str]]:
        """The tarball's data-directory script (`name`, at its top) and how its README says to start it."""
        script = TARBALL_SETUP.format(setup=name, bindir=bindir)
        return script, ["As an unprivileged user (postgres refuses root), where the tarball was unpacked:", "",
                        f"    ./{name} DATA && ./{bindir}/pg_ctl -D DATA -l DATA/server.log start", ""]

    def server_binary(self, install_dir: Path) -> Path:
        return install_dir / "bin" / "postgres"

    def installation(self, tree: Path, build_dir: Path, install_dir: Path) -> "PostgreSQLInstallation":
        return PostgreSQLInstallation(bin_dir=install_dir / "bin")


@dataclass
class PostgreSQLInstallation:
    bin_dir: Path
    server: str = "postgresql"
    port: int = 5432   # only names the socket file; there is no TCP listener
    # Cost mode: a client backend's main loop. The per-message handlers (exec_*_message) are static
    # and gcc inlines them into it (seen in a PGO build); PostgresMain is exported and never inlined.
    # Its start-up cost is cancelled by the difference of two runs (cost.CostExecutor).
    cost_entry_points: tuple[CostEntry, ...] = (CostEntry("PostgresMain"),)
    forks_backends: bool = FORKS_BACKENDS   # a backend per connection writes its counters when it exits
    data_version_parts: int = 1   # 17.x share a data directory format (the major version)
    cost_repeatability: float = 0.015   # A/A read-only instructions differed by up to 1.3 % here
    # Run once on freshly loaded benchmark data. Until a vacuum sets the visibility map, an index-only
    # scan visits the heap; autovacuum does that at a moment that depends on timing, so two servers of
    # one binary differed by 25-45 % in range-covered-pk's instructions. Vacuumed and analysed once, all
    # targets start from the same visibility map and statistics.
    after_load_sql: tuple[str, ...] = ("VACUUM (FREEZE, ANALYZE)",)
    server_program: Path | None = None  # another postgres binary to start (BOLT's instrumented copy)
    binary_name = "postgres"            # how --binary NAME=PATH recognises this server
    sysbench_driver = "pgsql"
    logs_to_stderr = True               # postgres logs to stderr, which the server's error log receives

    def valgrind_options(self) -> list[str]:
        # Cost mode counts backends as the difference of two runs; an autovacuum or autoanalyze
        # during one of them sends invalidations that make that backend reload its catalog caches,
        # a one-off larger than a short write test (seen: long run minus short run < 0). The loaded
        # data is vacuumed and analysed once (after_load_sql), so nothing needs it during a test.
        return ["-c", "autovacuum=off"]

    @classmethod
    def from_binary(cls, path: Path) -> "PostgreSQLInstallation":
        return cls(bin_dir=path.parent)

    def __post_init__(self):
        self.run_as = unprivileged_user()  # postgres refuses to run as root

    @property
    def server_binary(self) -> Path:
        return self.server_program or self.bin_dir / "postgres"

    def with_server_binary(self, binary: Path) -> "PostgreSQLInstallation":
        return replace(self, server_program=binary)

    @classmethod
    def system(cls, version: str = "15") -> "PostgreSQLInstallation":
        return cls(bin_dir=Path(f"/usr/lib/postgresql/{version}/bin"))

    def user(self) -> str:
        return self.run_as or "postgres"

    def init_commands(self, datadir: Path, tmpdir: Path) -> list[Cmd]:   # initdb needs no scratch dir
        return [Cmd([str(self.bin_dir / "initdb"), "-D", str(datadir), "-U", "postgres",
                     "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"], what="initdb")]

    def start_argv(self, datadir: Path, rundir: Path, options: list[str], config: Path | None = None) -> list[str]:
        user_config = ["-c", f"config_file={config}"] if config else []
        return [str(self.server_binary), "-D", str(datadir), *user_config, "-c", "listen_addresses=",
                "-c", f"unix_socket_directories={rundir}", "-p", str(self.port),
                "-c", "shared_buffers=256MB", "-c", "fsync=off", *options]

    def socket(self, rundir: Path) -> Path:
        return rundir / f".s.PGSQL.{self.port}"

    def error_log(self, rundir: Path) -> Path:
        return rundir / "error.log"

    def training_options(self, datadir: Path) -> list[str]:
        return []

    def training_mix(self, rundir: Path, options: MixOptions) -> PostgreSQLMix:
        return PostgreSQLMix(str(rundir), self.port, options)

    def client_argv(self, rundir: Path, sql: str, database: str | None = None) -> list[str]:
        psql = self.bin_dir / "psql"
        return [str(psql) if psql.exists() else "psql", "-X", "-h", str(rundir), "-p", str(self.port),
                "-U", "postgres", "-d", database or "postgres", "-Atq", "-v", "ON_ERROR_STOP=1", "-c", sql]

    def shutdown_argv(self, rundir: Path, datadir: Path) -> list[str]:
        # Fast shutdown: backends exit normally, so every process writes its profile.
        return [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(datadir), "-m", "fast", "-w", "-t", "120"]

    def create_database_sql(self, name: str) -> str:
        return f"CREATE DATABASE {name}"

    def database_exists_sql(self, name: str) -> str:
        return f"SELECT 1 FROM pg_database WHERE datname = '{name}'"

    def sysbench_args(self, rundir: Path, database: str) -> list[str]:
        return [f"--db-driver={self.sysbench_driver}", f"--pgsql-host={rundir}", f"--pgsql-port={self.port}",
                "--pgsql-user=postgres", f"--pgsql-db={database}"]

    def engine_load_args(self, engine: str) -> list[str]:
        return []

    def engine_options(self, engine: str) -> list[str]:
        return []

    def plugin_options(self) -> list[str]:
        return []

    def engine_missing(self, server, engine: str) -> str | None:
        return "PostgreSQL benchmarks its one table storage (heap) here: leave --engine out"

    def version_sql(self) -> str:
        return "SELECT version()"
