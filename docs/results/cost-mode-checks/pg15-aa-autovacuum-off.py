"""Debian's PostgreSQL 15 against itself in cost mode (quick suite, a quarter of the events).
Run as: mkdir -p /tmp/pgcost && PGOLAB_HOME=/tmp/pgcost/home .venv/bin/python docs/results/cost-mode-checks/pg15-aa-autovacuum-off.py"""
import time
from pathlib import Path
from pgolab import bench
from pgolab.store import Store
from pgolab.targets import PostgreSQLInstallation
t0=time.time()
targets = [bench.BenchTarget(l, "binary", PostgreSQLInstallation.system("15"), {}) for l in ("pg-a", "pg-b")]
store = Store(Path("/tmp/pgcost/results.sqlite"))
options = bench.BenchOptions(suite="quick", modes=("cost",), table_size=5000, cost_scale=0.25, cost_jobs=2)
rid = bench.run_bench(store, "pgc", "pg-a", targets, options, "test")
for s in store.samples(rid, "cost"):
    print(s.step.micro, s.step.label, s.step.block, round(s.values["instructions"]))
print("seconds", time.time()-t0)
