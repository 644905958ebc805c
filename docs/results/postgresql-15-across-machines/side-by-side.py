"""The PGO build against rel_o2nofp on the Intel Xeon (the replicates proof) and on this folder's machine,
per group and over the suite, from the two reports' CSV files: each figure on both machines and their
ratio (this machine's over the Intel Xeon's). The PGO binaries differ by digest (README); rel_o2nofp is
one binary on both. Writes side-by-side.txt.

    python3 docs/results/postgresql-15-across-machines/side-by-side.py
"""
import csv
from pathlib import Path

HERE = Path(__file__).parent
INTEL = HERE.parent / "postgresql-15-replicates" / "report"
LABEL = "rel_lto_pgo_use_clang"
FIGURES = {"qps": "rQPS", "cpu_us": "rCPU", "cycles": "rCost (model)", "instructions": "rInstr (model)",
           "i1_misses": "rI1 (model)"}


def suite(folder):
    row = next(r for r in csv.DictReader(open(folder / "builds.csv")) if r["build"] == LABEL)
    return {name: (float(row[k]), float(row[k + "_low"]), float(row[k + "_high"])) for k, name in FIGURES.items()}


def groups(folder):
    out = {}
    for r in csv.DictReader(open(folder / "groups.csv")):
        if r["build"] == LABEL:
            name = r["figure"].split(" on ")[0].split(",")[0]
            name = next((v for v in FIGURES.values() if v.split(" ")[0] == name), name)
            out[(r["group"], name)] = (float(r["geomean"]), float(r["geomean_low"]), float(r["geomean_high"]))
    return out


def line(where, figure, intel, here):
    fmt = lambda e: f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]"   # noqa: E731
    return f"{where:<8} {figure:<15} {fmt(intel):<22} {fmt(here):<22} {here[0] / intel[0]:.3f}"


rows = [f"{'group':<8} {'figure':<15} {'Intel Xeon':<22} {'this machine':<22} this / Intel"]
intel, here = suite(INTEL), suite(HERE / "report")
rows += [line("suite", f, intel[f], here[f]) for f in FIGURES.values()]
gi, gh = groups(INTEL), groups(HERE / "report")
rows += [line(g, f, gi[(g, f)], gh[(g, f)]) for (g, f) in gh if (g, f) in gi]
(HERE / "side-by-side.txt").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
