"""Section 6's figures: the instance variance pooled as in section 5 (one unweighted pool for every
test) against the current way (weighted by precision; tests that stand out carry their own), on the
re-judged store and on synthetic suites whose answer is known. Run from the checkout, after
reexclude.py has written the re-judged copy:
  .venv/bin/python docs/results/mariadb-10.11-measurement/pooling.py full-both-2-4ece7f0b /tmp/reex.sqlite"""

import math
import sys

import numpy as np

from pgolab import stats
from pgolab.stats import InstanceComponent, Observation, SuiteEstimates
from pgolab.store import Store


def one_pool(suite: SuiteEstimates) -> SuiteEstimates:
    """The same data with section 5's estimator: Σ(ss - block·df) / Σdf over every test."""
    spreads = [stats.InstanceSpread.of(m) for m in suite.micros.values()]
    spreads = [s for s in spreads if s.df]
    df = sum(s.df for s in spreads)
    component = InstanceComponent(max(0.0, sum(s.excess for s in spreads) / df), df)
    return SuiteEstimates(suite.micros, component, suite.within, suite.margin, suite.tolerance, {})


def describe(suite: SuiteEstimates) -> str:
    halves = [suite.micro(k).half_width for k in suite.micros]
    verdicts = sum(suite.micro(k).verdict() in ("faster", "slower") for k in suite.micros)
    apart = ", ".join(sorted(suite.own)) or "-"
    return (f"pool sd {math.sqrt(suite.component.variance) * 100:.2f} % on {suite.component.df:.0f} df; "
            f"apart: {apart}; per-test median half-width {np.median(halves) * 100:.1f} %; "
            f"faster/slower {verdicts} of {len(halves)}")


def stored(run: str, path: str) -> None:
    store = Store(path)
    row = store.db.execute("SELECT id, base FROM runs WHERE name = ?", (run,)).fetchone()
    excluded = {(k, i, b) for (m, k, i, b) in store.excluded(row["id"]) if m == "qps"}
    values = store.values(row["id"], "qps", "qps")
    labels = sorted({label for (_, _, _, label) in values} - {row["base"]})
    for label in labels:
        suite = SuiteEstimates.of(stats.paired_observations(values, row["base"], label, 1, excluded))
        print(f"{label}\n  section 5: {describe(one_pool(suite))}\n  now:       {describe(suite)}")


def synthetic(name, instance_sds, instances, blocks, block_sd, runs, seed, wild_blocks=0):
    rng = np.random.default_rng(seed)
    wild = {f"m{m}" for m, sd in enumerate(instance_sds) if sd > min(instance_sds)}
    tallies = {"section 5": [[], [], [], []], "now": [[], [], [], []]}
    zero = {"section 5": 0, "now": 0}
    for _ in range(runs):
        data = {}
        for m, sd in enumerate(instance_sds):
            data[f"m{m}"] = [Observation(i, b, u + rng.normal(0, block_sd))
                             for i, u in ((i, rng.normal(0, sd)) for i in range(instances)) for b in range(blocks)]
        for w in range(wild_blocks):
            data[f"w{w}"] = [Observation(i, b, rng.normal(0, 0.4)) for i in range(instances) for b in range(blocks)]
        now = SuiteEstimates.of(data)
        for way, suite in (("section 5", one_pool(now)), ("now", now)):
            steady_hits, wild_hits, halves, summary = tallies[way]
            for key in (k for k in suite.micros if k.startswith("m")):
                e = suite.micro(key)
                (wild_hits if key in wild else steady_hits).append(e.low <= 1 <= e.high)
                if key not in wild:
                    halves.append(e.half_width)
            s = suite.summary()
            summary.append(s.low <= 1 <= s.high)
            zero[way] += suite.component.variance == 0
    print(name)
    for way, (steady_hits, wild_hits, halves, summary) in tallies.items():
        wild_text = f"wild {np.mean(wild_hits) * 100:.1f} %, " if wild_hits else ""
        print(f"  {way:9}: steady {np.mean(steady_hits) * 100:.1f} % at median ±{np.median(halves) * 100:.1f} %, "
              f"{wild_text}suite {np.mean(summary) * 100:.1f} %; pool 0 in {zero[way]} of {runs}")


if __name__ == "__main__":
    stored(sys.argv[1], sys.argv[2])
    print("\nSynthetic suites: share of 95 % intervals that hold the true 1.0")
    synthetic("37 steady tests (0.5 %) and 3 wild (8 %), 2 instances x 3 blocks of 2 %", [0.005] * 37 + [0.08] * 3,
              2, 3, 0.02, 200, 1)
    synthetic("40 steady tests (1 %), 2 instances x 3 blocks of 2 %", [0.01] * 40, 2, 3, 0.02, 200, 2)
    synthetic("12 steady tests (3 %), 2 instances x 6 blocks of 3 %", [0.03] * 12, 2, 6, 0.03, 400, 3)
    synthetic("40 tests (2 %) and 3 whose blocks scatter by 40 %, 2 instances x 3 blocks of 1 %", [0.02] * 40,
              2, 3, 0.01, 100, 4, wild_blocks=3)
