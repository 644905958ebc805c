"""The training mix on a built mysqld (2,000 statements on each of 3 connections, seed 7): the
client's prepares against the server's Com_stmt_prepare and Com_stmt_reprepare, and the counters
of each statement class.

    .venv/bin/python docs/results/mix-checks/mysql-counters.py PATH/TO/mysqld
"""

import sys
import tempfile
from pathlib import Path

from pgolab.mix import MixOptions
from pgolab.runner import Runner
from pgolab.server import ServerProcess, initialize_datadir
from pgolab.targets import MySQLInstallation
from pgolab.workloads import parse_train, run_mix

COUNTERS = ("Com_stmt_prepare", "Com_stmt_reprepare", "Com_stmt_execute", "Com_set_option", "Com_select",
            "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback")


def main(mysqld: Path) -> None:
    installation = MySQLInstallation.from_binary(mysqld)
    with tempfile.TemporaryDirectory(prefix="pgolab-mix-") as tmp:
        datadir, rundir = Path(tmp, "data"), Path(tmp, "run")
        rundir.mkdir()
        runner = Runner(Path(tmp, "commands.log"))
        initialize_datadir(installation, datadir, runner)
        spec = parse_train("mix", 10)
        with ServerProcess(installation, datadir, rundir, runner,
                           options=spec.server_options("mysql", datadir)) as server:
            report = run_mix(server, MixOptions(statements=2000, connections=3, rows=500, seed=7), runner)
    print(f"statements {sum(report.counts.values())}, client prepares {report.prepares}, errors {len(report.errors)}")
    for name in COUNTERS:
        print(f"{name} {report.server_counters.get(name)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
