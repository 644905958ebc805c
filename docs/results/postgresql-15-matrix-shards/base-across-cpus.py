# The base rel_o2nofp (one binary by digest) measured in shard 1 (AMD EPYC family 26) and in the
# native piece (family 25): per test, how far its cost per query moved between the two CPU models.
# Usage: python3 base-across-cpus.py results.sqlite
import sqlite3, json, statistics, sys
db = sqlite3.connect(sys.argv[1])
def per_test(run, label="rel_o2nofp", key="instructions"):
    rows = db.execute("SELECT s.micro, s.vals FROM samples s JOIN runs r ON r.id = s.run_id "
                      "WHERE r.name = ? AND s.label = ? AND s.mode = 'cost'", (run, label)).fetchall()
    out = {}
    for micro, vals in rows:
        v = json.loads(vals)
        if v.get(key):
            out.setdefault(micro, []).append(v[key])
    return {m: statistics.mean(v) for m, v in out.items()}
for key in ("instructions", "cycles", "i1_misses"):
    a, b = per_test("pg15-shard1-of-6-91b545b4", key=key), per_test("pg15-shard-native-12650e19", key=key)
    common = sorted(set(a) & set(b))
    d = [abs(b[m] / a[m] - 1) for m in common]
    worst = max(common, key=lambda m: abs(b[m] / a[m] - 1))
    ro = [abs(b[m] / a[m] - 1) for m in common if not m.startswith("writes/")]
    print(f"{key}: {len(common)} tests; median |diff| {statistics.median(d)*100:.2f} %, max {max(d)*100:.2f} % ({worst}); "
          f"read-only tests: median {statistics.median(ro)*100:.2f} %, max {max(ro)*100:.2f} %")
