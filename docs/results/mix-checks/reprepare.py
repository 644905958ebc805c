"""Where the mix's extra Com_stmt_prepare come from: the training mix against Debian's mariadbd,
2,000 statements per connection, with and without its periodic DDL.
Run from the checkout: .venv/bin/python docs/results/mix-checks/reprepare.py > docs/results/mix-checks/reprepare.txt"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from test_mix import started  # noqa: E402  -- the tests' own server set-up

from pgolab.mix import MixOptions, MySQLMix  # noqa: E402
from pgolab.targets import MariaDBInstallation  # noqa: E402
from pgolab.workloads import parse_train, run_mix  # noqa: E402

for ddl in (True, False):
    if not ddl:
        MySQLMix.ddl = lambda self, conn, worker, step: None
    tmp = Path(tempfile.mkdtemp(prefix="pgolab-reprepare-"))
    server, runner = started(MariaDBInstallation.system(), tmp,
                             parse_train("mix", 10).server_options("mariadb", tmp / "data"))
    with server:
        report = run_mix(server, MixOptions(statements=2000, connections=3, rows=500, seed=7), runner)
    c = report.server_counters
    print(f"DDL {'on ' if ddl else 'off'}: statements {sum(report.counts.values())}, client prepares "
          f"{report.prepares}, Com_stmt_prepare {c['Com_stmt_prepare']}, Com_stmt_reprepare "
          f"{c['Com_stmt_reprepare']}, Com_stmt_execute {c['Com_stmt_execute']}, errors {len(report.errors)}")
