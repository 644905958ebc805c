"""The command line: parses arguments, shows progress, calls the modules that do the work."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from . import debian, paths, sources, toolchains
from . import variants as variants_mod
from .build import BuildRequest, build as run_build, like_distribution, require_buildable
from .errors import PgolabError, from_os_error
from . import replicates as replicates_mod
from .fleet import BenchOptions
from .render import console_for_output, rich_table
from .runner import Runner, home_runner
from .server import stop_all
from .workloads import parse_train


class _ArgumentHelp(TyperArgument):
    def display_type_rich(self, ctx):
        return None   # the name column already shows what to type (SOURCE, RUN)


class _OptionHelp(TyperOption):
    def display_type_rich(self, ctx):
        return None if self.is_flag else super().display_type_rich(ctx)   # a flag takes no value


class _UserHelp:
    """--help shows what a user types (`NAME=PATH`, `N`, `FILE`), never a Python type.

    typer (0.29) prints a parameter's annotation (<str>, <list[str]>, <bool>) wherever no metavar is
    given, for flags and --help itself too, and beside an argument's own metavar. Every option here
    has a metavar; this drops the type of flags and arguments. tests/test_cli_help.py checks it."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            if type(param) is TyperArgument:
                param.__class__ = _ArgumentHelp
            elif type(param) is TyperOption:
                param.__class__ = _OptionHelp
        return params


class _Command(_UserHelp, TyperCommand):
    pass


class _Group(_UserHelp, TyperGroup):
    pass


class _App(typer.Typer):
    """Every command's and group's help shows what a user types (a new command cannot forget it)."""

    def __init__(self, **kwargs):
        super().__init__(cls=_Group, **kwargs)

    def command(self, *args, **kwargs):
        return super().command(*args, cls=_Command, **kwargs)


app = _App(add_completion=False, no_args_is_help=True,
                  help="Build database servers with LTO and PGO, train them, and prove the result.")
console = Console(stderr=True)
out = console_for_output()   # never wraps tables into a pipe or a file


class LogLines:
    """Plain progress lines where the console is a log file, not a terminal.

    rich draws no live line into a file until the display stops, so a matrix run under nohup showed
    nothing for hours. One line when a step starts, and at most one a minute while it runs."""

    def __init__(self, console: Console, every: float = 60.0, clock=time.monotonic):
        self.console, self.every, self.clock = console, every, clock
        self.last: float | None = None

    def now(self, text: str) -> None:
        if not self.console.is_terminal:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            self.last = self.clock()

    def paced(self, text: str) -> None:
        if self.last is None or self.clock() - self.last >= self.every:
            self.now(text)


class RichReporter:
    """Phase, ninja's [n/N] step count and elapsed time, on one live line per phase."""

    def __init__(self, progress: Progress):
        self.display = progress
        self.task = None
        self.phase = ""
        self.log = LogLines(progress.console)

    def phase_started(self, name, description):
        self.phase = f"{name}: {description}"
        self.task = self.display.add_task(self.phase, total=None, left="")
        self.log.now(f"… {self.phase}")

    def phase_skipped(self, name, description):
        self.display.console.print(f"[dim]✓ {name}: {description} (up to date, skipped)[/dim]")

    def phase_finished(self, name, seconds):
        if self.task is not None:
            self.display.update(self.task, completed=1, total=1)
            self.display.stop_task(self.task)
        self.display.console.print(f"[green]✓[/green] {name} ({seconds:.0f}s)")

    def progress(self, done, total):
        if self.task is not None:
            self.display.update(self.task, completed=done, total=total)
            self.log.paced(f"  {self.phase}: {done}/{total}")

    def message(self, text):
        self.display.console.print(f"  {escape(text)}")


def _progress_display() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("{task.fields[left]}"), console=console)


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def _say_interrupted() -> None:
    console.print("[yellow]interrupted[/yellow]: finished phases and stored results are kept; "
                  "run the same command to continue")


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        from . import scratch
        scratch.sweep()    # scratch folders of pgolab processes that were killed
        app()
    except PgolabError as exc:
        console.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False)
        sys.exit(1)
    except Exception as exc:
        known = from_os_error(exc)
        if known is None:
            raise
        console.print(f"[bold red]error:[/bold red] {escape(str(known))}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        _say_interrupted()
        sys.exit(130)
    except SystemExit as exc:
        # typer turns Ctrl-C inside a command into exit status 130 without a word.
        if exc.code == 130:
            _say_interrupted()
        raise
    finally:
        stop_all()


def _runner(name: str) -> Runner:
    return home_runner(f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def _resolve_source(source: str) -> sources.SourceTree:
    return debian.resolve(source, _runner("source"))


@app.command()
def doctor() -> None:
    """List every tool the pipeline needs, its version, and the package for a missing one."""
    table = Table(title="pgolab doctor")
    for col in ("tool", "program", "version", "Debian package", "needed for"):
        table.add_column(col)
    missing = []
    for name, program, version, package, needed in toolchains.doctor_rows():
        shown = version if version else "[red]missing[/red]"
        table.add_row(name, program, shown, package, needed)
        if not version:
            missing.append(package)
    out.print(table)
    out.print(f"pgolab home: {paths.home()}  (override with PGOLAB_HOME)")
    if missing:
        out.print(f"[red]missing:[/red] apt-get install {' '.join(dict.fromkeys(missing))}"
                  "   (or run scripts/setup-system.sh)")
        raise typer.Exit(1)
    out.print("[green]all tools present[/green]")


@app.command()
def source(server: str = typer.Argument(..., metavar="SERVER",
                                        help="mariadb, mysql or postgresql (fetched from Debian), "
                                             "or a directory/tarball to recognise"),
           version: Optional[str] = typer.Option(None, "--version", metavar="VERSION",
                                                 help="Debian or upstream version, or its start (17, 11.8); "
                                                      "default: Debian 12's, else the newest served")) -> None:
    """Get a source tree from Debian's source packages (or recognise one you have) and print its path.

    Debian 12, 13 (trixie) and unstable (sid) are searched through pgolab's own apt configuration
    under its home; the machine's apt sources are not changed."""
    if Path(server).exists():
        tree = sources.detect(Path(server))
    else:
        tree = debian.fetch(server, version, _runner("source"))
    console.print(f"{tree.server} {tree.version}" + (f" ({tree.origin})" if tree.origin else ""))
    out.print(str(tree.path))


TRAIN_SECONDS_OPTION = typer.Option(150, "--train-seconds", metavar="N", help="length of the training run (seconds)")
TRAIN_CONNECTIONS_OPTION = typer.Option(None, "--train-connections", metavar="N",
                                        help="connections of the training (the mix's and sysbench's); "
                                             "default: each load's own (mix 4, sysbench 2)")
TRAIN_EVERY_BUILD_OPTION = typer.Option("mix", "--train", metavar="LOADS", help="training load of every PGO and BOLT build")
JOBS_OPTION = typer.Option(os.cpu_count() or 2, "--jobs", "-j", metavar="N", help="parallel compile jobs")
ENGINE_OPTION = typer.Option([], "--engine", metavar="NAME",
                             help="also build this storage-engine plugin (MariaDB: rocksdb), which the training "
                                  "covers; labelled +NAME (repeatable)")
PROFILES_OPTION = typer.Option(None, "--profiles", metavar="DIR", file_okay=False,
                               help="a folder of PGO and BOLT profiles: a PGO build another machine trained the "
                                    "same way compiles with its profile there, and a _bolt build whose compile "
                                    "gave the binary BOLT instrumented there lays out with BOLT's (the same "
                                    "binary, so a run begun there goes on here); one trained here is kept in it")
REPLICATES_OPTION = typer.Option(1, "--replicates", metavar="N",
                                 help="N independent builds of each variant (labelled V, V+r2, ...): another "
                                      "training seed for PGO, another code layout for every build; a report "
                                      "then includes the build-to-build spread")


@app.command("variants")
def list_variants(all_: bool = typer.Option(False, "--all", help="every combination of the axes, "
                                                                  "not only the 20 published builds"),
                  as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the build variants: name, axes and the flags each adds."""
    from .toolchains import compiler_family
    rows = variants_mod.all_variants() if all_ else variants_mod.published()
    data = []
    for v in rows:
        flags = variants_mod.flags_for(v, compiler_family(v.compiler).placeholder(), profile_dir=Path("/PROFILE"),
                                       build_dir=Path("/BUILD"))
        # Every axis of the Variant, so the JSON never lags behind the grammar.
        data.append({"name": v.name, **dataclasses.asdict(v), "description": v.describe(),
                     "flags": " ".join(flags.compile + flags.link)})
    if as_json:
        out.print_json(json.dumps(data))
        return
    out.print(rich_table(f"{len(data)} variants (flags are added after CMAKE_BUILD_TYPE=Release's -O3 -DNDEBUG)",
                         ["name", "compiler", "description", "added flags"],
                         [[d["name"], d["compiler"], d["description"], d["flags"]] for d in data],
                         no_wrap=not out.is_terminal))


@app.command("build")
def build_cmd(
    source_arg: str = typer.Argument(..., metavar="SOURCE",
                                     help="source directory, tarball, or mariadb, mysql, postgresql (=VERSION) to fetch"),
    variant: List[str] = typer.Option(["rel_o2nofp"], "--variant", "-v", metavar="NAME",
                                      help="variant name (repeatable)"),
    train: str = typer.Option("mix", "--train", metavar="LOADS",
                              help="training loads, comma-separated: mix, mix-noselect, sysbench, none, script:PATH"),
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_seed: int = typer.Option(1, "--train-seed", metavar="N", help="seed of the training mix"),
    train_connections: Optional[int] = TRAIN_CONNECTIONS_OPTION,
    server_config: Optional[Path] = typer.Option(None, "--server-config", metavar="FILE",
                                                 help="config file the trained server starts with"),
    jobs: int = JOBS_OPTION,
    cmake_arg: List[str] = typer.Option([], "--cmake-arg", metavar="ARG", help="extra configure argument (repeatable)"),
    no_ccache: bool = typer.Option(False, "--no-ccache", help="compile without ccache"),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="skip starting and querying the built server"),
    as_json: bool = typer.Option(False, "--json", help="print the build record as JSON"),
    label: Optional[str] = typer.Option(None, "--label", metavar="NAME",
                                        help="name of the build (default: the variant name); "
                                             "build one PGO variant with several trainings under different labels"),
    profile: Optional[Path] = typer.Option(None, "--profile", metavar="FILE", exists=True, dir_okay=False,
                                           help="compile a PGO variant with this exported profile "
                                                "(pgolab profile export) instead of training"),
    stale_profile: bool = typer.Option(False, "--stale-profile",
                                       help="accept a --profile trained on another tree of this server (upstream "
                                            "against Debian's, another release); the build says how much applies"),
    min_profile_match: float = typer.Option(50.0, "--min-profile-match", metavar="PCT",
                                            help="with --stale-profile: refuse the build below this share of the "
                                                 "profile's functions applying"),
    distribution_options: bool = typer.Option(
        False, "--distribution-options",
        help="configure like Debian's package of this server (its paths and features), as `pgolab package` "
             "needs; built beside the plain build, labelled +debian"),
    replicates: int = REPLICATES_OPTION,
    engine: list[str] = ENGINE_OPTION,
) -> None:
    """Build variants; a PGO variant runs the whole pipeline (instrument, train, merge, optimize)."""
    tree = _resolve_source(source_arg)
    spec = parse_train(train, train_seconds, seed=train_seed, server_config=server_config,
                       connections=train_connections)
    parsed = [variants_mod.parse(v) for v in variant]
    if label and len(parsed) > 1:
        raise PgolabError("--label names one build", hint="give one --variant with --label")
    if profile and (len(parsed) > 1 or not parsed[0].reads_profile):
        raise PgolabError("--profile is the profile of one PGO build", hint="give one PGO --variant, e.g. rel_pgo_use")
    if stale_profile and not profile:
        raise PgolabError("--stale-profile says how to read a --profile FILE", hint="give --profile FILE with it")
    if not 0 <= min_profile_match <= 100:
        raise PgolabError(f"--min-profile-match {min_profile_match} is not a percentage", hint="give 0 to 100")
    replicates_mod.check_count(replicates)
    if label:
        replicates_mod.check_label(label)
    distribution = like_distribution(tree) if distribution_options else None
    console.print(f"source: {tree.server} {tree.version} at {tree.path}")
    if distribution:
        console.print(f"configured like Debian's {distribution.package} {distribution.version} "
                      f"(options read from {distribution.read_from})")
    for v in parsed:      # every refusal before the first build
        require_buildable(v, tree.server)
    records = []
    for v, k in ((v, k) for v in parsed for k in range(1, replicates + 1)):
        request = BuildRequest(tree, v, spec, jobs=jobs, extra_args=list(cmake_arg), use_ccache=not no_ccache,
                               smoke=not no_smoke, label=label, profile_file=profile.absolute() if profile else None,
                               distribution=distribution, engines=tuple(engine),
                               stale_min_match=min_profile_match / 100 if stale_profile else None).replicate_of(k)
        console.rule(f"{request.name}: {v.describe()}" + (f"; replicate {k} of {replicates}" if replicates > 1 else ""))
        with _progress_display() as progress:
            result = run_build(request, RichReporter(progress))
        if result.up_to_date:
            console.print(f"[green]{request.name} is up to date[/green]: inputs unchanged, nothing to do")
        records.append(result.record)
        console.print(f"server binary: {result.server_binary}")
        console.print(f"installed tree: {result.install_dir}")
        console.print(f"logs: {result.variant_dir / 'logs'}   record: {result.variant_dir / 'build.json'}")
    if as_json:
        out.print_json(json.dumps([r.as_dict() for r in records]))
    else:
        for r in records:
            out.print(r.server_binary)


def _fraction(text: Optional[str]) -> Optional[float]:
    """'3%' or '0.03' -> 0.03."""
    if text is None:
        return None
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise PgolabError(f"not a fraction: {text!r}", hint="e.g. --target-ci 3% or --target-ci 0.03")


# Options bench and matrix share, defined once: `with_bench_options` adds them to a command's
# signature and hands the command one BenchOptions, whose own defaults are the options' defaults.
_DEFAULT = BenchOptions()
# Options several commands share, defined once.
STORE_OPTION = typer.Option(None, "--store", metavar="FILE", help="SQLite file (default in pgolab home)")

BENCH_OPTIONS: list[tuple[str, type, object]] = [
    ("suite", str, typer.Option(_DEFAULT.suite, "--suite", metavar="quick|full|none",
                                  help="quick, full, or none (only your --micro files)")),
    ("measure", str, typer.Option(",".join(_DEFAULT.modes), "--measure", metavar="qps,cost",
                                  help="qps, cost, or qps,cost (both, one stored run)")),
    ("slice_seconds", float, typer.Option(_DEFAULT.slice_seconds, "--seconds", metavar="SECONDS",
                                          help="seconds per paired QPS slice")),
    ("instances", int, typer.Option(_DEFAULT.instances, "--instances", metavar="N",
                                    help="server starts per microbenchmark (QPS)")),
    ("blocks", int, typer.Option(_DEFAULT.blocks, "--blocks", metavar="N",
                                 help="paired blocks per instance (QPS; even keeps orders balanced)")),
    ("target_ci", Optional[str], typer.Option(None, "--target-ci", metavar="N%",
                                              help="add instances until every 95% half-width is at most N% "
                                                   "(e.g. 3%, or 0.03)")),
    ("max_instances", int, typer.Option(_DEFAULT.max_instances, "--max-instances", metavar="N",
                                        help="ceiling for --target-ci")),
    ("pair_budget", float, typer.Option(_DEFAULT.pair_budget_s, "--pair-budget", metavar="SECONDS",
                                        help="measured seconds per microbenchmark and pair")),
    ("no_pin", bool, typer.Option(False, "--no-pin", help="do not pin server and sysbench to disjoint CPUs")),
    ("cost_scale", float, typer.Option(_DEFAULT.cost_scale, "--cost-scale", metavar="FACTOR",
                                       help="multiplies the cost-mode event counts")),
    ("cost_jobs", int, typer.Option(_DEFAULT.cost_jobs, "--cost-jobs", metavar="N",
                                    help="cost-mode servers measured at once (counts are simulated, so they do "
                                         "not disturb each other); default: one per CPU")),
    ("threads", str, typer.Option(",".join(map(str, _DEFAULT.threads)), "--threads", metavar="N[,N...]",
                                  help="sysbench threads; several (1,2,4,8) measure every test at each count")),
    ("tables", int, typer.Option(_DEFAULT.tables, "--tables", metavar="N", help="sysbench tables")),
    ("engine", str, typer.Option(_DEFAULT.engine, "--engine", metavar="innodb|rocksdb|myisam|aria",
                                 help="the tables' storage engine (MariaDB, MySQL); default: the server's")),
    ("micro", List[str], typer.Option([], "--micro", metavar="FILE",
                                      help="your own microbenchmark, run after the suite in group 'user': a "
                                           "sysbench .lua script or a .sql file of statements run in order "
                                           "(repeatable)")),
    ("table_size", int, typer.Option(_DEFAULT.table_size, "--table-size", metavar="ROWS",
                                     help="rows of each sysbench table")),
    ("profile_of", Optional[str], typer.Option(None, "--profile-of", metavar="small-server|medium-server",
                                               help="a published configuration: small-server = 1 table of 30M "
                                                    "rows, 1 thread; medium-server = 8 tables of 10M rows, 12 "
                                                    "threads (instead of --tables, --table-size, --threads)")),
    ("binary", List[str], typer.Option([], "--binary", metavar="NAME=PATH",
                                       help="any server binary, under the label NAME (repeatable)")),
    ("store_path", Optional[Path], STORE_OPTION),
    ("out_dir", Optional[Path], typer.Option(None, "--out", metavar="DIR", help="also export the report here")),
]
PASSED_AS_IS = ("binary", "store_path", "out_dir")


def with_bench_options(command):
    """Adds BENCH_OPTIONS to a command: it receives `options` (BenchOptions) plus the PASSED_AS_IS values."""
    import functools
    import inspect
    own = [p for p in inspect.signature(command).parameters.values()
           if p.name not in ("options",) + PASSED_AS_IS]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
             for name, kind, default in BENCH_OPTIONS]

    @functools.wraps(command)
    def wrapper(**values):
        passed = {name: values.pop(name) for name in PASSED_AS_IS}
        chosen = {name: values.pop(name) for name, _, _ in BENCH_OPTIONS if name not in PASSED_AS_IS}
        return command(**values, **passed, options=_bench_options(**chosen))
    wrapper.__signature__ = inspect.Signature(own + added)
    wrapper.__annotations__ = {**{p.name: p.annotation for p in own}, **{n: k for n, k, _ in BENCH_OPTIONS}}
    return wrapper


def _bench_options(suite, measure, slice_seconds, instances, blocks, target_ci, max_instances, pair_budget,
                   no_pin, cost_scale, cost_jobs, threads, tables, engine, micro, table_size, profile_of):
    from . import measurement
    from .suite import parse_threads, user_micro_path, user_micros
    if profile_of:
        shape = measurement.data_shape(profile_of)
        given = (tables, table_size, threads) != (_DEFAULT.tables, _DEFAULT.table_size, ",".join(map(str, _DEFAULT.threads)))
        if given:
            raise PgolabError(f"--profile-of {profile_of} sets the tables, their size and the threads",
                              hint="leave out --tables, --table-size and --threads, or --profile-of")
        tables, table_size, threads = shape.tables, shape.table_size, ",".join(map(str, shape.threads))
    if tables < 1 or table_size < 1:
        raise PgolabError(f"--tables {tables} --table-size {table_size}: both must be at least 1",
                          hint="e.g. --tables 8 --table-size 100000")
    return BenchOptions(suite=suite, modes=measurement.parse_modes(measure), slice_seconds=slice_seconds,
                        instances=instances, blocks=blocks, max_instances=max(max_instances, instances),
                        target_ci=_fraction(target_ci), pair_budget_s=pair_budget, pin=not no_pin,
                        cost_scale=cost_scale, cost_jobs=cost_jobs, threads=parse_threads(threads),
                        tables=tables, table_size=table_size, engine=engine.lower(),
                        own_micros=tuple(str(user_micro_path(m)) for m in user_micros(tuple(micro))))


def _step_display(progress: Progress, prefix: str = ""):
    """A live line for a benchmark run: the step, done of total, and an estimate of the time left."""
    task = progress.add_task(f"{prefix}starting", total=None, left="left ~?")
    log = LogLines(progress.console)
    started = time.monotonic()
    first_done: list[int] = []

    def on_step(state):
        first_done or first_done.append(state.done)   # steps found stored do not count for the pace
        measured = state.done - first_done[0]
        pace = (time.monotonic() - started) / measured if measured else None
        left = "left ~" + (time.strftime("%H:%M:%S", time.gmtime(pace * (state.total - state.done))) if pace else "?")
        progress.update(task, description=escape(prefix + state.text), completed=state.done, total=state.total,
                        left=left)
        log.paced(f"{prefix}{state.done}/{state.total} steps, {left}: {state.text}")
    return on_step


def _command_line() -> str:
    return "pgolab " + " ".join(__import__("shlex").quote(a) for a in sys.argv[1:])


@app.command("train")
def train_cmd(
    binary: Path = typer.Option(..., "--binary", metavar="PATH", exists=True, dir_okay=False,
                                help="the server you built with clang's -fprofile-generate (mariadbd, mysqld, postgres)"),
    profile_dir: Path = typer.Option(..., "--profile-dir", metavar="DIR", file_okay=False,
                                     help="where the raw and merged profiles go (earlier ones there are removed)"),
    train: str = typer.Option("mix", "--train", metavar="LOADS",
                              help="training loads, comma-separated: mix, mix-noselect, sysbench, script:PATH"),
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_connections: Optional[int] = TRAIN_CONNECTIONS_OPTION,
) -> None:
    """Train an instrumented server from your own build: start it on a fresh data directory with
    absolute per-process profile files, run the load, stop it cleanly, merge, and print the flags
    for your optimized build."""
    from .user_build import train_binary
    spec = parse_train(train, train_seconds, connections=train_connections)
    console.print(f"training {binary} with {spec.label}")
    trained = train_binary(binary, profile_dir, spec, report=console.print)
    for line in trained.covered:
        console.print(line)
    console.print(f"profile: {trained.profile} ({trained.raw_files} raw files, {trained.raw_bytes / 1024:.0f} KiB, "
                  f"{trained.functions} functions; {trained.compiler})")
    console.print("compile the optimized build with (C and C++ flags): " + " ".join(trained.use_flags))


@app.command("cmake-module")
def cmake_module_cmd(
    source_arg: str = typer.Argument(..., metavar="SOURCE", help="a MariaDB or MySQL source tree (as for pgolab build)"),
    train: str = typer.Option("mix", "--train", metavar="LOADS",
                              help="training loads the build runs, comma-separated: mix, mix-noselect, sysbench, "
                                   "script:PATH"),
    train_seconds: int = TRAIN_SECONDS_OPTION,
) -> None:
    """Write a CMake module into the tree and hook it into its CMakeLists.txt: `cmake -DWITH_PGO=ON`
    then builds the server instrumented, trains it (pgolab train), builds it with the profile, checks
    it (pgolab verify) and installs it."""
    from .cmake_module import usage, write_module
    tree = _resolve_source(source_arg)
    spec = parse_train(train, train_seconds)
    written = write_module(tree, ["--train", ",".join(spec.loads), "--train-seconds", str(spec.seconds)])
    console.print(f"wrote {written.module}")
    console.print(f"{'hooked into' if written.hooked else 'already hooked into'} {written.cmakelists}")
    console.print(f"in a new build folder: {usage(written, tree.path)}")


@app.command("verify")
def verify_cmd(
    binary: Path = typer.Option(..., "--binary", metavar="PATH", exists=True, dir_okay=False,
                                help="the optimized server in its CMake build folder (e.g. BUILD/sql/mariadbd)"),
) -> None:
    """Check a PGO build of your own: the share of the server's objects the profile shaped, and the
    server's answer on a fresh data directory."""
    from .user_build import verify_binary
    verified = verify_binary(binary)
    console.print(f"profile used in {verified.with_profile} of {verified.objects} objects "
                  f"({verified.with_profile / max(verified.objects, 1):.0%}; {verified.scope})")
    console.print(f"server answered: {verified.version}")


@app.command("bench")
@with_bench_options
def bench_cmd(
    base: str = typer.Option(..., "--base", metavar="LABEL", help="the label every other target is compared with"),
    variant: List[str] = typer.Option([], "--variant", "-v", metavar="NAME",
                                      help="a variant built by pgolab (repeatable)"),
    no_prepared: bool = typer.Option(False, "--no-prepared", help="plain queries instead of prepared statements"),
    server_option: List[str] = typer.Option([], "--server-option", metavar="OPTION",
                                            help="extra server option, same for all"),
    source_dir: Optional[Path] = typer.Option(None, "--source", metavar="DIR",
                                              help="pick variants built from this tree"),
    run_name: Optional[str] = typer.Option(None, "--run", metavar="NAME",
                                           help="run name; an existing one resumes; "
                                                "{binaries} in it stands for the binaries' digest (and the host's, for QPS)"),
    replicates: int = typer.Option(1, "--replicates", metavar="N",
                                   help="also measure each build's replicates V+r2 .. V+rN (pgolab build "
                                        "--replicates N): the report adds the build-to-build spread"),
    *, options, binary, store_path, out_dir,
) -> None:
    """Run the sysbench suite on variants and binaries, store every sample, print the report."""
    from . import bench
    from .store import Store
    targets = bench.resolve_targets(base, variant, binary, source_dir, replicates_mod.check_count(replicates))
    if len(targets) < 2:
        raise PgolabError("bench needs at least two targets (the base and one to compare)",
                          hint="e.g. --base distro --binary distro=/usr/sbin/mariadbd --variant rel_o2nofp")
    options = replace(options, prepared=not no_prepared, server_options=list(server_option))
    store = Store(store_path)
    name = run_name or time.strftime("run-%Y%m%d-%H%M%S")
    console.print(f"run {name}; store {store.path}")
    with _progress_display() as progress:
        run_id = bench.run_bench(store, name, base, targets, options, _command_line(), _step_display(progress))
    _show_run(store, run_id, out_dir)


class RichMatrixProgress:
    """`matrix N/M` before every build and the benchmark; each build's phases as `pgolab build` shows them."""

    def __init__(self, progress: Progress):
        self.display = progress
        self.on_step = None

    def left_out(self, variant, reason):
        self.display.console.print(f"[yellow]not built:[/yellow] {variant.name}: {reason}", soft_wrap=True)

    def build_started(self, index, total, variant):
        self.display.console.rule(f"matrix {index + 1}/{total} builds: {variant.name} ({variant.describe()}); "
                                  f"{total - index - 1} after it, then the benchmark")
        return RichReporter(self.display)

    def build_finished(self, index, total, result, seconds):
        state = "up to date" if result.up_to_date else f"built in {seconds / 60:.1f} min"
        self.display.console.print(f"[green]✓[/green] {result.record.label}: {state}")

    def bench_step(self, state):
        if self.on_step is None:
            self.display.console.rule("matrix: benchmark of every build in one run")
            self.on_step = _step_display(self.display, "bench ")
        self.on_step(state)


@app.command("matrix")
@with_bench_options
def matrix_cmd(
    source_args: List[str] = typer.Argument(..., metavar="SOURCE",
                                            help="source directories, tarballs, or servers to fetch; several make "
                                                 "a version series (labels <server>-<version>:<variant>)"),
    variants: str = typer.Option("published", "--variants", metavar="published|all|NAME,...",
                                 help="published (the study's 20), all, or NAME,NAME,..."),
    bolt: bool = typer.Option(False, "--bolt", help="add the _bolt twin of every PGO variant chosen"),
    base: str = typer.Option("rel_o2nofp", "--base", metavar="LABEL",
                             help="the build every other one is compared with "
                                  "(in a series: of the first source, or SERVER-VERSION:VARIANT)"),
    train: str = TRAIN_EVERY_BUILD_OPTION,
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_connections: Optional[int] = TRAIN_CONNECTIONS_OPTION,
    jobs: int = JOBS_OPTION,
    run_name: Optional[str] = typer.Option(None, "--run", metavar="NAME",
                                           help="run name (default: matrix-SOURCE-SUITE-MODES); "
                                                "{binaries} in it stands for the binaries' digest (and the host's, for QPS)"),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="K/N",
                                        help="build and measure the K-th of N shares of the matrix, and the base "
                                             "(pgolab merge puts the shards' runs together)"),
    replicates: int = REPLICATES_OPTION,
    profiles: Optional[Path] = PROFILES_OPTION,
    cluster: Optional[str] = typer.Option(None, "--cluster", metavar="tcp://SCHEDULER:8786",
                                          help="build and cost-measure on a Dask cluster, one build per task, and "
                                               "merge the results here (workers: --resources build=1)"),
    bench_host: Optional[str] = typer.Option(None, "--bench-host", metavar="WORKER",
                                             help="with --cluster and --measure cost,qps: the worker (name, host or "
                                                  "address) that receives every build and measures its QPS"),
    *, options, binary, store_path, out_dir,
) -> None:
    """Build every variant named (cheapest first, up-to-date ones skipped), benchmark them all in one
    stored run, and print the per-build and per-group tables with each build's cost. Run it again to continue."""
    from . import bench, matrix
    from .store import Store
    train_spec = parse_train(train, train_seconds, connections=train_connections)
    replicates_mod.check_count(replicates)
    if cluster and replicates > 1:
        raise PgolabError("--replicates is not run on a cluster yet", hint="run the matrix with --replicates on one "
                          "host, or in shards (--shard K/N) merged with pgolab merge")
    if cluster and profiles:
        raise PgolabError("--profiles is not read on a cluster yet: each worker trains its own PGO builds",
                          hint="leave --profiles out, or run the matrix on one host or in shards (--shard K/N)")
    if bench_host and not cluster:
        raise PgolabError("--bench-host names a worker of a --cluster", hint="add --cluster tcp://SCHEDULER:8786, or "
                          "leave --bench-host out: a matrix on one host measures its QPS there")
    if cluster:
        _matrix_on_cluster(cluster, bench_host, source_args, variants, bolt, base, train_spec, options,
                           run_name, jobs, binary, shard, store_path, out_dir)
        return
    trees = [_resolve_source(s) for s in source_args]
    share = matrix.parse_shard(shard) if shard else None
    request = matrix.MatrixRequest(
        sources=trees, variants=matrix.choose(variants, bolt), base=base, train=train_spec,
        options=options, run_name=run_name or matrix.default_run_name(trees, options, share, replicates),
        binaries=[bench.binary_target(b) for b in binary], jobs=jobs, shard=share, replicates=replicates,
        profiles=profiles.absolute() if profiles else None)
    store = Store(store_path)
    shown = ", ".join(f"{t.server} {t.version}" for t in trees)
    console.print(f"source: {shown}; run {request.run_name}; store {store.path}")
    with _progress_display() as progress:
        result = matrix.run_matrix(request, store, RichMatrixProgress(progress), _command_line())
    console.print(f"matrix: {len(result.builds)} builds ({sum(not b.up_to_date for b in result.builds)} built now) "
                  f"in {result.build_seconds / 60:.1f} min, benchmark {result.bench_seconds / 60:.1f} min")
    _show_run(store, result.run_id, out_dir, also=(result.timing_log,))


@app.command("best")
@with_bench_options
def best_cmd(
    source_arg: str = typer.Argument(..., metavar="SOURCE", help="as for pgolab build"),
    start: str = typer.Option("rel_lto_pgo_use_clang", "--start", metavar="NAME",
                              help="the build the search starts from (the published table's best)"),
    min_gain: str = typer.Option("0%", "--min-gain", metavar="FRACTION",
                                 help="keep an axis only if its whole interval of estimated cycles lies this "
                                      "far beyond the build before it (e.g. 1% or 0.01)"),
    budget: Optional[float] = typer.Option(None, "--budget", metavar="HOURS",
                                           help="start no new round once the search's builds and runs took this "
                                                "long on this machine (all invocations together; rounds read "
                                                "from a store measured elsewhere take none)"),
    axes: Optional[str] = typer.Option(None, "--axes", metavar="TOKEN,...",
                                       help="only these axes (e.g. native,clang19,cs,bolt,jemalloc); default: all"),
    no_confirm: bool = typer.Option(False, "--no-confirm", help="skip the QPS confirmation of the winner"),
    train: str = TRAIN_EVERY_BUILD_OPTION,
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_connections: Optional[int] = TRAIN_CONNECTIONS_OPTION,
    jobs: int = JOBS_OPTION,
    profiles: Optional[Path] = PROFILES_OPTION,
    run_name: Optional[str] = typer.Option(None, "--run", metavar="NAME",
                                           help="prefix of the rounds' run names (default: best-SOURCE-SUITE)"),
    *, options, binary, store_path, out_dir,
) -> None:
    """Search for the fastest build: from --start, add one axis at a time (cost mode), keep the cheapest
    if it gains beyond --min-gain, then confirm the winner and the runner-up in QPS against the start and
    every --binary (e.g. distro=/usr/sbin/mariadbd). --measure is not used: rounds are cost, the
    confirmation QPS. Run it again to continue."""
    from dataclasses import replace

    from . import bench, best, matrix
    from .render import export, print_terminal
    from .store import Store
    tree = _resolve_source(source_arg)
    start_variant = variants_mod.parse(start)
    request = matrix.MatrixRequest(
        sources=[tree], variants=[start_variant], base=start, train=parse_train(train, train_seconds,
                                                                                connections=train_connections),
        options=replace(options, modes=("cost",)), run_name=run_name or f"best-{tree.label}-{options.suite}",
        binaries=[bench.binary_target(b) for b in binary], jobs=jobs, profiles=profiles.absolute() if profiles else None)
    store = Store(store_path)
    console.print(f"source: {tree.server} {tree.version}; search from {start}; store {store.path}")
    with _progress_display() as progress:
        rounds = best.MatrixRounds(request, store, RichMatrixProgress(progress), _command_line(), say=console.print)
        searched = variants_mod.axes_named(axes) if axes else variants_mod.AXES
        result = best.search(start_variant, rounds, min_gain=_fraction(min_gain) or 0.0, budget_hours=budget,
                             axes=searched)
        confirm_id = None if no_confirm else rounds.confirm(result, searched)
    confirm_name = store.run(confirm_id).name if confirm_id else None
    path = best.stored_path_report(store, result, f"{tree.server} {tree.version}", confirm_name)
    print_terminal(path, out)
    if out_dir:
        export(path, out_dir / "path")
    if confirm_id:
        _show_run(store, confirm_id, out_dir)


def _matrix_on_cluster(address, bench_host, source_args, variants, bolt, base, train, options, run_name, jobs,
                       binary, shard, store_path, out_dir) -> None:
    from . import cluster, matrix
    from .store import Store
    if len(source_args) != 1 or binary or shard:
        raise PgolabError("--cluster runs one source's matrix, without --binary or --shard",
                          hint="give one SOURCE; measure other binaries on one machine with pgolab bench")
    cluster.check_options(options, bench_host)
    name = run_name or f"matrix-{source_args[0].replace('/', '_')}-{options.suite}-{'-'.join(options.modes)}-cluster"
    tasks = cluster.shares(matrix.choose(variants, bolt), base, source_args[0], train,
                           cluster.worker_options(options), name, jobs)
    on_host = cluster.bench_host_task(bench_host, base, options, name) if bench_host else None
    store = Store(store_path)
    _show_merged(store, cluster.run(address, tasks, store, name, _command_line(), say=console.print, bench=on_host),
                 out_dir)


@app.command("merge")
def merge_cmd(
    shards: List[str] = typer.Argument(..., metavar="RUN_OR_FILE...", help="each shard's run, or its exported file"),
    name: str = typer.Option(..., "--name", metavar="NAME", help="the merged run's name"),
    fill: List[str] = typer.Option([], "--fill", metavar="RUN_OR_FILE",
                                   help="a run that adds only what no shard measured, per measure and label (e.g. "
                                        "-march=native builds' cost from a CPU without AVX-512); repeatable"),
    store_path: Optional[Path] = STORE_OPTION,
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR",
                                           help="write every format, charts and report.html here"),
) -> None:
    """One run from a matrix's shards (matrix --shard K/N), each build read against its own shard's
    base; refused with the reason if they are not one experiment. Prints the matrix tables."""
    from .merge import merge
    from .store import Store
    store = Store(store_path)
    _show_merged(store, merge(store, shards, name, _command_line(), fill=fill), out_dir)


@app.command("machines")
def machines_cmd(
    runs: List[str] = typer.Argument(..., metavar="RUN_OR_FILE...",
                                     help="runs that measured the same binary on different machines: stored here, "
                                          "or files written by pgolab export"),
    label: str = typer.Option(..., "--label", metavar="LABEL", help="the target to compare, e.g. rel_o2nofp"),
    store_path: Optional[Path] = STORE_OPTION,
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="also export the table here"),
) -> None:
    """One binary's cost per query, test by test, from runs on several machines, side by side: how far
    cost mode's figures depend on the host; and its ratio to the runs' base on each machine, with the
    machine-to-machine component, when the base is one binary too. Refused unless the label is one
    binary (sha256) in every run."""
    from . import machines, merge
    from .render import export, print_terminal
    from .store import Store
    data = machines.compare(merge.load(Store(store_path), runs), label)
    print_terminal(data, out)
    if out_dir:
        console.print(f"exported to {out_dir}: {', '.join(p.name for p in export(data, out_dir).values())}")


@app.command("axes")
def axes_cmd(
    runs: List[str] = typer.Argument(..., metavar="RUN_OR_FILE...",
                                     help="runs of one server: stored here, or files written by pgolab export"),
    store_path: Optional[Path] = STORE_OPTION,
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="also export the table here"),
) -> None:
    """Every axis's effect on one server in one table: each build against its twin without that axis
    (rel_lto against rel, a best round's candidate against its start), from every run given, each read
    as its own report reads it, in every measure it has, with its run and machine."""
    from . import axis_table, merge
    from .render import export, print_terminal
    from .store import Store
    data = axis_table.axes_report(merge.load(Store(store_path), runs, at_least=1))
    print_terminal(data, out)
    if out_dir:
        console.print(f"exported to {out_dir}: {', '.join(p.name for p in export(data, out_dir).values())}")


def _show_merged(store, merged, out_dir: Optional[Path]) -> None:
    """A merged run's report, then each CPU model's run of wall-clock figures (in OUT/<its run name>)."""
    _show_run(store, merged.run_id, out_dir)
    for model, run_id in merged.per_cpu.items():
        console.print(f"\nWall-clock figures measured on {model}:", style="bold", highlight=False)
        _show_run(store, run_id, out_dir / store.run(run_id).name if out_dir else None)


def _show_run(store, run_id: int, out_dir: Optional[Path], also: tuple[Path, ...] = ()) -> None:
    """A stored run's report on the terminal and, with --out, in every format, with `also` copied there."""
    from . import report
    from .render import export, print_terminal
    data = report.compute(store, run_id)
    print_terminal(data, out)
    if out_dir:
        files = [p.name for p in export(data, out_dir).values()]
        for path in also:
            shutil.copy(path, out_dir / path.name)
            files.append(path.name)
        console.print(f"exported to {out_dir}: {', '.join(files)}")


@app.command("package")
def package_cmd(
    build_label: str = typer.Argument(..., metavar="BUILD",
                                      help="a finished build's label, e.g. rel_lto_pgo_use_clang+debian"),
    fmt: str = typer.Option("deb", "--format", metavar="FORMAT",
                            help="deb: a drop-in over the distribution's server binary (a build made with "
                                 "--distribution-options); tar: a relocatable binary tarball"),
    out_dir: Path = typer.Option(Path("."), "--out", "-o", metavar="DIR", help="where the package is written"),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE",
                                              help="a store whose run measured this build: its headline goes "
                                                   "into the package's README"),
    run: Optional[str] = typer.Option(None, "--run", metavar="RUN", help="that run (default: the store's newest)"),
) -> None:
    """Package a finished build: a .deb that replaces Debian's server binary (dpkg-divert; removal
    puts it back), or a binary tarball; both carry the build record and the measured gain."""
    from .package import package
    from .runner import home_runner
    from .store import Store
    made = package(build_label, fmt, out_dir.absolute(), home_runner("package"),
                   Store(store_path) if store_path else None, run)
    if made.features:
        console.print(made.features.markdown())
    if made.binary_digest:
        console.print(f"server binary sha256 as packaged: {made.binary_digest}", soft_wrap=True)
    out.print(str(made.path))


@app.command("report")
def report_cmd(
    run: Optional[str] = typer.Argument(None, metavar="RUN", help="run name or id (default: the newest)"),
    store_path: Optional[Path] = STORE_OPTION,
    fmt: str = typer.Option("terminal", "--format", metavar="FORMAT",
                            help="terminal, markdown, html, csv (per microbenchmark) or json"),
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR",
                                           help="write every format, charts and report.html here"),
    list_runs: bool = typer.Option(False, "--list", help="list stored runs"),
    base: Optional[str] = typer.Option(None, "--base", metavar="LABEL",
                                       help="compare against this target instead of the run's base (e.g. distro)"),
) -> None:
    """Print or export a stored run."""
    from . import report
    from .render import HtmlRenderer, MarkdownRenderer, export, print_terminal, to_csv, to_json
    from .store import Store
    store = Store(store_path)
    if list_runs:
        out.print(rich_table(f"runs in {store.path}", ["id", "name", "created", "server", "base", "suite", "status"],
                             [[str(r.id), r.name, r.created, r.server, r.base, r.suite, r.status]
                              for r in store.runs()]))
        return
    data = report.compute(store, run, base)
    if out_dir:
        files = export(data, out_dir)
        console.print(f"exported to {out_dir}: {', '.join(p.name for p in files.values())}")
    writers = {"markdown": lambda: MarkdownRenderer().render(data), "html": lambda: HtmlRenderer().render(data),
               "csv": lambda: to_csv(data.table("micro")), "json": lambda: to_json(data)}
    if fmt == "terminal":
        print_terminal(data, out)
    elif fmt in writers:
        sys.stdout.write(writers[fmt]())
    else:
        raise PgolabError(f"unknown format {fmt!r}", hint="terminal, markdown, html, csv or json")


@app.command("export")
def export_cmd(
    run: str = typer.Argument(..., metavar="RUN", help="run name or id"),
    out_file: Path = typer.Option(..., "--out", "-o", metavar="FILE", help="the run file to write"),
    store_path: Optional[Path] = STORE_OPTION,
    with_profiles: bool = typer.Option(False, "--with-profiles",
                                       help="add every profile its PGO targets compiled with (their twins' "
                                            "too) and its _bolt targets' BOLT profiles, for another machine "
                                            "to build the same binaries"),
) -> None:
    """Write a stored run as one file (identity, host, targets with their build records, every sample
    and excluded block), for `pgolab import` on another machine."""
    from .runfile import export_run
    from .store import Store
    written = export_run(Store(store_path), run, out_file, with_profiles)
    console.print(f"{out_file}: run {run}, {written.samples} samples")
    if with_profiles:
        console.print(f"profiles: {', '.join(written.profiles) or 'none'}")
    for missing in written.left_out:
        console.print(f"not in the file: {missing}")


@app.command("import")
def import_cmd(
    run_file: Path = typer.Argument(..., metavar="FILE", help="a file written by pgolab export"),
    store_path: Optional[Path] = STORE_OPTION,
) -> None:
    """Bring an exported run into the store: the run if it is new, else the samples it lacks. Run the
    run's own command to continue it (a cost-only run continues on any host)."""
    from .runfile import import_run
    from .store import Store
    got = import_run(Store(store_path), run_file)
    console.print(f"run {got.run}: {got.samples_added} of {got.samples_in_file} samples added")
    for path in got.profiles:
        console.print(f"profile: {path} (pgolab build SOURCE --variant V --profile {path})")
    for path in got.bolt_profiles:
        console.print(f"BOLT profile: {path} (read through --profiles only)")
    if every := got.profiles + got.bolt_profiles:
        console.print(f"give the run's matrix or search command --profiles {every[0].parent}: its PGO "
                      "builds compile from these files, and its _bolt builds are laid out from BOLT's")
    for missing in got.left_out:
        console.print(f"not in the file: {missing}")


profile_app = _App(no_args_is_help=True, help="A PGO build's training profile as a file.")
app.add_typer(profile_app, name="profile")


def _say_profile_written(out_file: Path, identity) -> None:
    console.print(f"{out_file}: {identity.files} files ({identity.bytes / 1024:.0f} KiB) of {identity.made_by}, "
                  f"trained with {identity.training}; for {identity.instrumented_variant} of {identity.server} "
                  f"{identity.source_version} (source {identity.source_digest[:10]})")


@profile_app.command("export")
def profile_export_cmd(
    build_label: str = typer.Argument(..., metavar="BUILD", help="a finished PGO build's label, e.g. rel_pgo_use"),
    out_file: Path = typer.Option(..., "--out", "-o", metavar="FILE", help="where to write the profile"),
    source: Optional[Path] = typer.Option(None, "--source", metavar="DIR",
                                          help="the build of this source tree (default: the newest build of BUILD)"),
) -> None:
    """Write a PGO build's merged profile with what it was made from (source digest, instrumented
    variant, compiler, training); `pgolab build SOURCE --variant V --profile FILE` compiles with it."""
    from .profile_file import export_build
    identity = export_build(build_label, source, out_file)
    _say_profile_written(out_file, identity)


@profile_app.command("make")
def profile_make_cmd(
    source_arg: str = typer.Argument(..., metavar="SOURCE", help="as for pgolab build"),
    variant: str = typer.Option(..., "--variant", "-v", metavar="NAME",
                                help="the PGO variant the profile is for, e.g. rel_lto_pgo_use_clang"),
    out_file: Path = typer.Option(..., "--out", "-o", metavar="FILE", help="where to write the profile"),
    train: str = typer.Option("mix", "--train", metavar="LOADS",
                              help="training loads, comma-separated: mix, mix-noselect, sysbench, script:PATH"),
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_seed: int = typer.Option(1, "--train-seed", metavar="N", help="seed of the training mix"),
    train_connections: Optional[int] = TRAIN_CONNECTIONS_OPTION,
    jobs: int = JOBS_OPTION,
    label: Optional[str] = typer.Option(None, "--label", metavar="NAME", help="the build's label, if it is given one"),
    distribution_options: bool = typer.Option(False, "--distribution-options",
                                              help="the instrumented build configured like Debian's package"),
    engine: list[str] = ENGINE_OPTION,
) -> None:
    """Build a PGO variant's instrumented build and train it, and write the profile as `profile export`
    does, without compiling the optimized build: `pgolab build SOURCE --variant V --profile FILE` does
    that, here or on another machine."""
    from .build import train_profile
    tree = _resolve_source(source_arg)
    spec = parse_train(train, train_seconds, seed=train_seed, connections=train_connections)
    request = BuildRequest(tree, variants_mod.parse(variant), spec, jobs=jobs, label=label,
                           distribution=like_distribution(tree) if distribution_options else None,
                           engines=tuple(engine))
    with _progress_display() as progress:
        identity = train_profile(request, out_file.absolute(), RichReporter(progress))
    _say_profile_written(out_file, identity)
    console.print(f"compile with it: pgolab build SOURCE --variant {variant} --profile {out_file}")


@app.command("profile-check")
def profile_check_cmd(
    source_arg: str = typer.Argument(..., metavar="SOURCE", help="as for pgolab build"),
    variant: str = typer.Option(..., "--variant", "-v", metavar="NAME", help="a PGO variant, e.g. rel_pgo_use"),
    train: str = typer.Option("mix", "--train", metavar="LOADS", help="the training loads of that variant"),
    train_seconds: int = TRAIN_SECONDS_OPTION,
    train_seed: int = typer.Option(1, "--train-seed", metavar="N", help="seed of the training mix"),
    suite: str = typer.Option("quick", "--suite", metavar="quick|full",
                              help="benchmark suite run once on the instrumented build"),
    seconds: int = typer.Option(5, "--seconds", metavar="N", help="seconds per microbenchmark"),
    workload: Optional[str] = typer.Option(None, "--workload", metavar="LOADS",
                                           help="instead of the suite: loads as for --train (e.g. script:PATH)"),
    jobs: int = JOBS_OPTION,
    label: Optional[str] = typer.Option(None, "--label", metavar="NAME", help="the build's label, if it was given one"),
    engine: list[str] = ENGINE_OPTION,
) -> None:
    """How well a training profile covers a benchmark: overlap and the hot functions it misses."""
    from .quality import profile_check
    tree = _resolve_source(source_arg)
    spec = parse_train(train, train_seconds, seed=train_seed)
    chosen = parse_train(workload, train_seconds) if workload else None
    request = BuildRequest(tree, variants_mod.parse(variant), spec, jobs=jobs, label=label, engines=tuple(engine))
    with _progress_display() as progress:
        report = profile_check(request, RichReporter(progress), suite=suite, seconds=seconds, workload=chosen)
    out.print(report.describe(), markup=False, highlight=False)


@app.command("builds")
def builds_cmd(as_json: bool = typer.Option(False, "--json", help="print JSON"),
               markdown: bool = typer.Option(False, "--markdown", help="a Markdown table"),
               server: Optional[str] = typer.Option(None, "--server", metavar="SERVER[-VERSION]",
                                                    help="only builds of this server, or server and version "
                                                         "start: postgresql, mariadb-10.11, mysql-9.7.2")) -> None:
    """List finished builds: binary, wall and CPU time, profile use, smoke test answer."""
    from .record import BuildRecord
    from .render import MarkdownRenderer, print_table, table_cells
    from .report import builds_list_table
    records = [r for r in BuildRecord.all()
               if not server or f"{r.server}-{r.version}".startswith(server)]
    if as_json:
        out.print_json(json.dumps([r.as_dict() for r in records]))
        return
    table = builds_list_table(records, f"builds in {paths.builds_dir()}")
    if markdown:
        out.print(MarkdownRenderer().grid(*table_cells(table)), markup=False, highlight=False, soft_wrap=True,
                  end="")
    else:
        print_table(table, out, no_wrap=not out.is_terminal)
