"""The stored proof run with its QPS outliers judged again by the current rule (stats.outliers):
every stored block of a test, each headline figure of each target, at once (cost mode has no
outlier rule: its repeats are the write tests' state-dependent spread); the exclusions written into a
copy of the store, whose report is then made as usual.
Run from the checkout:
  .venv/bin/python docs/results/mariadb-10.11-measurement/reexclude.py RUN COPY.sqlite
  .venv/bin/pgolab report RUN --store COPY.sqlite --out OUT"""

import shutil
import sys
from pathlib import Path

from pgolab.schedule import outlier_blocks
from pgolab.store import Store

run, copy = sys.argv[1], Path(sys.argv[2])
shutil.copyfile(Path(__file__).with_name("results.sqlite"), copy)
store = Store(copy)
row = store.db.execute("SELECT id, base FROM runs WHERE name = ?", (run,)).fetchone()
run_id, base = row["id"], row["base"]
before = store.excluded(run_id)
store.db.execute("DELETE FROM excluded WHERE run_id = ? AND mode = 'qps'", (run_id,))
labels = sorted({r[0] for r in store.db.execute("SELECT DISTINCT label FROM samples WHERE run_id = ?", (run_id,))})
mode = "qps"
flagged = outlier_blocks(store, run_id, mode, base, labels, excluded=set())
for (micro, instance, block), reason in sorted(flagged.items()):
    store.exclude(run_id, mode, micro, instance, block, reason)
old = sum(1 for k in before if k[0] == mode)
blocks = store.db.execute("SELECT count(DISTINCT micro || ':' || instance || ':' || block) FROM samples "
                          "WHERE run_id = ? AND mode = ?", (run_id, mode)).fetchone()[0]
print(f"{mode}: {blocks} stored blocks; excluded by the rule of the run {old}, by the current rule {len(flagged)}")
for (micro, instance, block), reason in sorted(flagged.items()):
    print(f"  {micro} instance {instance} block {block}: {reason}")
