"""Whether each committed MariaDB and PostgreSQL A/A cost run's suite interval (builds table) holds 1.
Run: .venv/bin/python docs/results/cost-mode-checks/aa-suite-coverage.py"""
import sys, math
from pgolab.store import Store
from pgolab import report
cases = [("docs/results/cost-mode-checks/results.sqlite", "b", "a"),
         ("docs/results/mariadb-10.11-measurement/results.sqlite", "rel_o2nofp", "aa"),
         ("docs/results/mariadb-10.11-measurement/results.sqlite", "distro", "distro2"),
         ("docs/results/mariadb-10.11-measurement/cost-check.sqlite", "rel_o2nofp", "aa")]

for path, base, other in cases:
    s = Store(path)
    for rid, name in s.db.execute("select id, name from runs").fetchall():
        labels = {r[0] for r in s.db.execute("select distinct label from samples where run_id=? and mode='cost'", (rid,))}
        if not {base, other} <= labels:
            continue
        try:
            data = report.compute(s, rid, base)
        except Exception as e:
            print(name, "ERR", e); continue
        for row in data.table("builds").rows:
            if row.get("label", row.get("build")) != other and other not in str(list(row.values())[0]):
                continue
            for fig in ("instructions", "i1_misses", "cycles"):
                e = row.get(fig)
                if e is None: continue
                cov = e.low <= 1 <= e.high
                print(f"{path.split('/')[-2][:16]:16s} {name[:30]:30s} {other:8s} {fig:12s} {e.value:.4f} [{e.low:.4f}, {e.high:.4f}] {'covers' if cov else 'MISSES'}")
