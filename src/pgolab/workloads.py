"""Training loads: what runs against an instrumented server to produce its profile.

`--train` takes: sysbench (sysbench's oltp scripts), none (start and stop only),
or script:PATH where PATH is a .sql file (fed to the client), a .lua file
(a sysbench script) or any executable (it gets the socket and client settings in
its environment).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import PgolabError
from .runner import Runner
from .server import ServerProcess

TRAIN_DATABASE = "sbtest"


@dataclass(frozen=True)
class TrainingSpec:
    kind: str            # sysbench | none | script
    seconds: int = 150
    path: Path | None = None
    tables: int = 4
    table_size: int = 20000
    threads: int = 2
    seed: int = 1

    @property
    def label(self) -> str:
        return f"script:{self.path}" if self.kind == "script" else self.kind

    def digest_input(self) -> str:
        extra = ""
        if self.path and self.path.is_file():
            import hashlib
            extra = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return f"{self.label}|{self.seconds}|{self.tables}|{self.table_size}|{self.threads}|{self.seed}|{extra}"


def parse_train(value: str, seconds: int) -> TrainingSpec:
    if value in ("sysbench", "none"):
        return TrainingSpec(value, seconds)
    if value.startswith("script:"):
        path = Path(value[len("script:"):]).expanduser().absolute()
        if not path.exists():
            raise PgolabError(f"training script not found: {path}",
                              hint="give script:PATH with a .sql, .lua or executable file")
        return TrainingSpec("script", seconds, path)
    raise PgolabError(f"unknown training load {value!r}", hint="use sysbench, none or script:PATH")


def sysbench_common(server: ServerProcess, spec: TrainingSpec) -> list[str]:
    inst = server.installation
    return [*inst.sysbench_args(server.rundir, TRAIN_DATABASE), f"--tables={spec.tables}",
            f"--table-size={spec.table_size}", f"--rand-seed={spec.seed}", "--rand-type=uniform"]


def run_training(server: ServerProcess, spec: TrainingSpec, runner: Runner) -> None:
    """Drive a started server with the training load."""
    if spec.kind == "none":
        server.query(server.installation.version_sql(), what="training (none): version query")
        return
    server.query(server.installation.create_database_sql(TRAIN_DATABASE), what="create training database")
    common = sysbench_common(server, spec)
    if spec.kind == "sysbench":
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.threads}", "prepare"],
                   what="sysbench prepare")
        # A mix of point and range selects, index and non-index updates, deletes and inserts,
        # with and without prepared statements, then plain inserts.
        share = spec.seconds // 3
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.threads}",
                    f"--time={share}", "--report-interval=10", "run"], what="sysbench oltp_read_write")
        runner.run(["sysbench", "oltp_read_write", *common, f"--threads={spec.threads}",
                    "--db-ps-mode=disable", f"--time={share}", "--report-interval=10", "run"],
                   what="sysbench oltp_read_write (no prepared statements)")
        runner.run(["sysbench", "oltp_insert", *common, "--threads=1",
                    f"--time={max(spec.seconds - 2 * share, 1)}", "--report-interval=10", "run"],
                   what="sysbench oltp_insert")
        server.check_alive()
        return
    path = spec.path
    assert path is not None
    if path.suffix == ".sql":
        sql = path.read_text()
        server.query(sql, database=TRAIN_DATABASE, what=f"training script {path.name}")
    elif path.suffix == ".lua":
        runner.run(["sysbench", str(path), *common, f"--threads={spec.threads}", f"--time={spec.seconds}",
                    "run"], what=f"sysbench {path.name}")
    elif os.access(path, os.X_OK):
        inst = server.installation
        env = {"PGOLAB_SERVER": inst.server, "PGOLAB_SOCKET": str(inst.socket(server.rundir)),
               "PGOLAB_SOCKET_DIR": str(server.rundir), "PGOLAB_DATABASE": TRAIN_DATABASE,
               "PGOLAB_SECONDS": str(spec.seconds),
               "PGOLAB_SYSBENCH_ARGS": " ".join(inst.sysbench_args(server.rundir, TRAIN_DATABASE))}
        runner.run([str(path)], env=env, what=f"training script {path.name}")
    else:
        raise PgolabError(f"cannot run training script {path}",
                          hint="use a .sql file, a .lua sysbench script, or make it executable (chmod +x)")
    server.check_alive()
