"""How busy the server's one CPU was in the thread sweep: per build and thread count, queries per
second times the server's CPU seconds per query (both as stored per QPS slice), averaged over the
slices of every test at that count (the user's oltp_read_write included).
Usage: python3 server-cpu-share.py [results.sqlite]   (output: server-cpu-share.txt beside it)"""

import json
import sqlite3
import statistics
import sys
from collections import defaultdict
from pathlib import Path

store = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("results.sqlite")
db = sqlite3.connect(store)
run_id, name = db.execute("SELECT id, name FROM runs WHERE name LIKE 'mariadb-threads-%' ORDER BY id DESC").fetchone()
busy = defaultdict(list)
cpu_us = defaultdict(list)
for micro, label, vals in db.execute("SELECT micro, label, vals FROM samples WHERE run_id = ? AND mode = 'qps'",
                                     (run_id,)):
    v = json.loads(vals)
    threads = int(micro.rsplit("@", 1)[1].rstrip("t"))
    busy[(label, threads)].append(v["qps"] * v["cpu_us"] / 1e6)
    cpu_us[(label, threads)].append(v["cpu_us"])
print(f"run {name}: the server's CPU busy share (queries/s x server CPU seconds per query), mean over "
      f"slices [min, max]; server CPU microseconds per query, median over slices")
print(f"{'build':24} {'threads':>7} {'slices':>6} {'CPU busy':>9} {'min':>6} {'max':>6} {'CPU us/query':>13}")
for label, threads in sorted(busy, key=lambda k: (k[0], k[1])):
    b = busy[(label, threads)]
    print(f"{label:24} {threads:7d} {len(b):6d} {statistics.fmean(b):9.3f} {min(b):6.3f} {max(b):6.3f} "
          f"{statistics.median(cpu_us[(label, threads)]):13.1f}")
