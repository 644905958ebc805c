"""Training loads: what runs against an instrumented server to produce its profile.

`--train` takes one load or several joined by commas, run in order in one
training run: mix (the built-in broad mix, default), mix-noselect (the same
without any SELECT), sysbench (sysbench's oltp scripts), none (start and stop
only), or script:PATH where PATH is a .sql file (run as `bench --micro` runs
it: its statements in a loop on one connection, over sysbench's tables loaded
first), a .lua file (a sysbench script) or any executable (it gets the socket
and client settings in its environment).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import PgolabError
from .mix import MIX_REVISION, MixOptions
from .suite import lua_dir, user_micro
from .runner import Runner
from .server import ServerProcess

TRAIN_DATABASE = "sbtest"
# How a .sql training script runs: 2 repeats it for the load's seconds over sysbench's tables (as
# --micro runs it); 1 ran it once. A build trained the old way is not up to date with the new.
SQL_SCRIPT_REVISION = 2
BUILTIN_LOADS = ("mix", "mix-noselect", "sysbench", "none")


@dataclass(frozen=True)
class TrainingSpec:
    loads: tuple[str, ...] = ("mix",)   # builtin names or script:/abs/path
    seconds: int = 150
    tables: int = 4
    table_size: int = 20000
    threads: int = 2
    seed: int = 1
    server_config: Path | None = None
    # --train-connections: the mix's connections and sysbench's threads; None keeps each load's own
    # (mix 4, sysbench `threads`), so that builds trained before the option keep their digest.
    connections: int | None = None

    @property
    def label(self) -> str:
        loads = ",".join(self.loads)
        return f"{loads} at {self.connections} connections" if self.connections else loads

    @property
    def client_threads(self) -> int:
        return self.connections or self.threads

    def mix_options(self, seconds: float, load: str) -> MixOptions:
        extra = {"connections": self.connections} if self.connections else {}
        return MixOptions(seconds=seconds, seed=self.seed, no_select=load == "mix-noselect", **extra)

    @property
    def seconds_each(self) -> int:
        return max(self.seconds // max(len(self.loads), 1), 1)

    def digest_input(self) -> str:
        extra = []
        for load in self.loads:
            if load.startswith("script:"):
                extra.append(hashlib.sha256(Path(load[7:]).read_bytes()).hexdigest())
                if load.endswith(".sql"):      # run once before revision 2, in a loop since
                    extra.append(f"sql script revision {SQL_SCRIPT_REVISION}")
            elif load.startswith("mix"):
                extra.append(f"mix revision {MIX_REVISION}")
        if self.server_config:
            extra.append(hashlib.sha256(self.server_config.read_bytes()).hexdigest())
        return (f"{self.label}|{self.seconds}|{self.tables}|{self.table_size}|{self.threads}|{self.seed}|"
                + "".join(extra))

    def digest(self) -> str:
        """Short fingerprint of everything the training is (a build record keeps it)."""
        return hashlib.sha256(self.digest_input().encode()).hexdigest()[:16]

    def server_options(self, installation, datadir: Path) -> list[str]:
        """What the training server needs: its plugin engines whatever the load (their code is trained
        too), and for the mix what it covers (MariaDB and MySQL: binary logs)."""
        mix = installation.training_options(datadir) if any(l.startswith("mix") for l in self.loads) else []
        return [*installation.plugin_options(), *mix]


def parse_train(value: str, seconds: int, *, seed: int = 1, server_config: Path | None = None,
                connections: int | None = None) -> TrainingSpec:
    loads = []
    for item in (v.strip() for v in value.split(",") if v.strip()):
        if item in BUILTIN_LOADS:
            loads.append(item)
        elif item.startswith("script:"):
            path = Path(item[len("script:"):]).expanduser().absolute()
            if not path.exists():
                raise PgolabError(f"training script not found: {path}",
                                  hint="give script:PATH with a .sql, .lua or executable file")
            loads.append(f"script:{path}")
        else:
            raise PgolabError(f"unknown training load {item!r}",
                              hint=f"use {', '.join(BUILTIN_LOADS)} or script:PATH, joined by commas")
    if not loads:
        raise PgolabError("no training load given", hint="e.g. --train mix")
    if server_config is not None and not server_config.is_file():
        raise PgolabError(f"server config file not found: {server_config}")
    if connections is not None and connections < 1:
        raise PgolabError(f"--train-connections {connections}: at least 1", hint="e.g. --train-connections 2")
    return TrainingSpec(tuple(loads), seconds, seed=seed,
                        server_config=server_config.absolute() if server_config else None, connections=connections)


def sysbench_common(server: ServerProcess, spec: TrainingSpec) -> list[str]:
    inst = server.installation
    return [*inst.sysbench_args(server.rundir, TRAIN_DATABASE), f"--tables={spec.tables}",
            f"--table-size={spec.table_size}", f"--rand-seed={spec.seed}", "--rand-type=uniform"]


def run_training(server: ServerProcess, spec: TrainingSpec, runner: Runner) -> list[str]:
    """Drive a started server with every load of the spec; returns what each covered."""
    summaries = []
    for load in spec.loads:
        summaries.append(run_load(server, load, spec, runner))
        server.check_alive()
    return summaries


def run_mix(server: ServerProcess, options: MixOptions, runner: Runner):
    mix = server.installation.training_mix(server.rundir, options)
    runner.note(f"training mix: {options}")
    try:
        report = mix.run(alive=server.running)
    finally:
        server.check_alive()     # a crash is reported with the server's error log, not as failed statements
    runner.note(report.describe())
    if report.errors:
        raise PgolabError(f"the training mix had {len(report.errors)} failed statements",
                          detail="\n".join(report.errors[:10]), log=runner.log_path,
                          hint="a failing statement trains an error path instead of the real one; see the log")
    return report


def run_load(server: ServerProcess, load: str, spec: TrainingSpec, runner: Runner) -> str:
    inst = server.installation
    seconds = spec.seconds_each
    if load == "none":
        server.query(inst.version_sql(), what="training (none): version query")
        return "none: version query"
    if load in ("mix", "mix-noselect"):
        report = run_mix(server, spec.mix_options(seconds, load), runner)
        return report.describe()
    server.ensure_database(TRAIN_DATABASE)
    common = sysbench_common(server, spec)
    path = Path(load[len("script:"):])
    if load == "sysbench" or path.suffix == ".sql":
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.client_threads}", "cleanup"],
                   what="sysbench cleanup", check=False)
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.client_threads}", "prepare"],
                   what="sysbench prepare")
    if load == "sysbench":
        # Point and range selects, index and non-index updates, deletes and inserts, with and
        # without prepared statements, then plain inserts.
        share = seconds // 3
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.client_threads}",
                    f"--time={share}", "--report-interval=10", "run"], what="sysbench oltp_read_write")
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.client_threads}",
                    "--db-ps-mode=disable", f"--time={share}", "--report-interval=10", "run"],
                   what="sysbench oltp_read_write (no prepared statements)")
        runner.run(["sysbench", "oltp_insert", *common, "--threads=1",
                    f"--time={max(seconds - 2 * share, 1)}", "--report-interval=10", "run"],
                   what="sysbench oltp_insert")
        return f"sysbench: oltp_read_write (prepared and not), oltp_insert, {seconds}s"
    if path.suffix == ".sql":
        # The file's own microbenchmark as training (the version-series study trained its statement
        # with itself): one connection, as --micro runs it, since its statements may race at several.
        runner.run(["sysbench", *user_micro(str(path)).argv(lua_dir()), *common, "--threads=1",
                    f"--time={seconds}", "--report-interval=10", "run"], what=f"sysbench {path.name}")
        return f"script {path}: its statements in a loop, {seconds}s"
    elif path.suffix == ".lua":
        runner.run(["sysbench", str(path), *common, f"--threads={spec.client_threads}", f"--time={seconds}",
                    "run"], what=f"sysbench {path.name}")
    elif os.access(path, os.X_OK):
        env = {"PGOLAB_SERVER": inst.server, "PGOLAB_SOCKET": str(inst.socket(server.rundir)),
               "PGOLAB_SOCKET_DIR": str(server.rundir), "PGOLAB_DATABASE": TRAIN_DATABASE,
               "PGOLAB_SECONDS": str(seconds),
               "PGOLAB_SYSBENCH_ARGS": " ".join(inst.sysbench_args(server.rundir, TRAIN_DATABASE))}
        runner.run([str(path)], env=env, what=f"training script {path.name}")
    else:
        raise PgolabError(f"cannot run training script {path}",
                          hint="use a .sql file, a .lua sysbench script, or make it executable (chmod +x)")
    return f"script {path}"
