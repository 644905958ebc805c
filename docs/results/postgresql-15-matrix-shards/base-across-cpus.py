# The base rel_o2nofp (one binary by digest) measured in shard 1 (AMD EPYC family 26) and in the
# native piece (family 25): per test, how far its cost per query moved between the two CPU models.
# The per-test means are pgolab merge's own (merge.cost_per_query, which its anchor check reads).
# Usage: .venv/bin/python docs/results/postgresql-15-matrix-shards/base-across-cpus.py results.sqlite
import statistics
import sys

from pgolab import merge
from pgolab.store import Store

KEYS = ("instructions", "cycles", "i1_misses")
first, native = merge.load(Store(sys.argv[1]), ["pg15-shard1-of-6-91b545b4", "pg15-shard-native-12650e19"])
a, b = (merge.cost_per_query(shard, "rel_o2nofp", KEYS) for shard in (first, native))
for key in KEYS:
    moved = {micro: abs(b[(micro, k)] / a[(micro, k)] - 1) for micro, k in a if k == key and (micro, k) in b}
    worst = max(moved, key=moved.get)
    read_only = [d for micro, d in moved.items() if not micro.startswith("writes/")]
    print(f"{key}: {len(moved)} tests; median |diff| {statistics.median(moved.values())*100:.2f} %, max "
          f"{moved[worst]*100:.2f} % ({worst}); read-only tests: median {statistics.median(read_only)*100:.2f} %, "
          f"max {max(read_only)*100:.2f} %")
