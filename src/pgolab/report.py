"""Reports computed from the store: terminal, Markdown, CSV, JSON, PNG charts, one HTML page."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from . import stats
from .errors import PgolabError
from .store import Store
from .suite import GROUPS

METRICS = {"qps": "rQPS (QPS variant / QPS base)",
           "cpu": "rCPU (server CPU per query, base / variant)"}


@dataclass
class Row:
    micro: str          # group/name
    group: str
    label: str
    rqps: stats.Estimate
    rcpu: stats.Estimate | None
    qps_median: float
    qps_spread: float   # (max-min)/median over rounds


def compute(store: Store, run_ref: str | int | None) -> dict:
    run = store.run(run_ref)
    if run is None:
        raise PgolabError(f"no stored run {run_ref!r}" if run_ref else "the store holds no run yet",
                          hint=f"`pgolab report --list` shows stored runs (store: {store.path})")
    rows = store.measurements(run["id"])
    base = run["base"]
    series: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    groups: dict[str, str] = {}
    for r in rows:
        series[(r["micro"], r["label"])][r["round"]] = {"qps": r["qps"], "cpu": r["cpu_us_per_query"]}
        groups[r["micro"]] = r["grp"]
    labels = [t["label"] for t in store.targets(run["id"])]
    micros = list(dict.fromkeys(r["micro"] for r in rows))
    result_rows: list[Row] = []
    per_label: dict[str, tuple[list, list]] = {l: ([], []) for l in labels if l != base}
    # The same for CPU per query, inverted (base / variant) so that > 1 is better, like rQPS.
    per_label_cpu: dict[str, tuple[list, list]] = {l: ([], []) for l in per_label}
    # (group, label, metric) -> per microbenchmark (numerator, denominator) series, paired by round.
    per_group: dict[tuple[str, str, str], list[tuple[list, list]]] = defaultdict(list)
    for micro in micros:
        b = series.get((micro, base), {})
        for label in labels:
            if label == base:
                continue
            v = series.get((micro, label), {})
            common = sorted(set(b) & set(v))
            if not common:
                continue
            vq, bq = [v[i]["qps"] for i in common], [b[i]["qps"] for i in common]
            rqps = stats.ratio_estimate(vq, bq)
            rcpu = None
            if all(b[i]["cpu"] and v[i]["cpu"] for i in common):
                # Inverted so that > 1 means less CPU per query for the variant.
                bc, vc = [b[i]["cpu"] for i in common], [v[i]["cpu"] for i in common]
                rcpu = stats.ratio_estimate(bc, vc)
                per_label_cpu[label][0].append(bc)
                per_label_cpu[label][1].append(vc)
            sp = stats.spread(vq)
            result_rows.append(Row(micro, groups[micro], label, rqps, rcpu, sp["median"], sp["rel_range"]))
            per_label[label][0].append(vq)
            per_label[label][1].append(bq)
            per_group[(groups[micro], label, "qps")].append((vq, bq))
            if rcpu is not None:
                per_group[(groups[micro], label, "cpu")].append((bc, vc))
    summaries = {}
    for label, (vs, bs) in per_label.items():
        if vs:
            summaries[label] = {"avg": stats.summary_estimate(vs, bs, "avg"),
                                "median": stats.summary_estimate(vs, bs, "median")}
            bc, vc = per_label_cpu[label]
            # Only where every microbenchmark has a CPU figure: a partial summary would mislead.
            if len(bc) == len(vs):
                summaries[label]["cpu_avg"] = stats.summary_estimate(bc, vc, "avg")
                summaries[label]["cpu_median"] = stats.summary_estimate(bc, vc, "median")
    group_tables = {}
    for metric, estimate_of in (("qps", lambda r: r.rqps), ("cpu", lambda r: r.rcpu)):
        for group in GROUPS:
            for label in per_label:
                values = [estimate_of(r).value for r in result_rows
                          if r.group == group and r.label == label and estimate_of(r) is not None]
                if values:
                    # min and max over the group's microbenchmarks; avg and median with intervals,
                    # computed round by round as for the per-variant summary.
                    nums, dens = zip(*per_group[(group, label, metric)])
                    table = stats.group_summary(values)
                    for how in ("avg", "median"):
                        e = stats.summary_estimate(list(nums), list(dens), how)
                        table |= {how: e.value, f"{how}_low": e.low, f"{how}_high": e.high, "rounds": e.rounds}
                    group_tables[(group, label, metric)] = table
    def base_noise(metric: str) -> list[float]:
        """Per microbenchmark, how much the base's own figure moved between rounds."""
        out = []
        for m in micros:
            values = [x[metric] for x in series.get((m, base), {}).values()]
            if len(values) > 1 and all(values):
                out.append(stats.spread(values)["rel_range"])
        return out

    return {"run": dict(run), "targets": [dict(t) for t in store.targets(run["id"])], "rows": result_rows,
            "summaries": summaries, "groups": group_tables, "labels": list(per_label), "base": base,
            "measurements": len(rows), "base_noise": base_noise("qps"), "base_cpu_noise": base_noise("cpu")}


def noise_statement(data: dict) -> str:
    noise = data["base_noise"]
    opts = json.loads(data["run"]["options"])
    if not noise:
        return "Only one round per microbenchmark: no statement about noise is possible."
    import numpy as np
    flagged = sum(1 for r in data["rows"] if not r.rqps.no_difference)
    rows_cpu = [r for r in data["rows"] if r.rcpu is not None]
    flagged_cpu = sum(1 for r in rows_cpu if not r.rcpu.no_difference)
    cpu_noise = data.get("base_cpu_noise") or []
    cpu_text = (f" Its server CPU time per query varied by a median of {np.median(cpu_noise) * 100:.0f}% "
                f"(max {max(cpu_noise) * 100:.0f}%)." if cpu_noise else "")
    return (f"{opts['rounds']} interleaved rounds of {opts['seconds']}s per microbenchmark. "
            f"Between rounds, the base's own QPS varied by a median of {np.median(noise) * 100:.0f}% "
            f"(max {max(noise) * 100:.0f}%) of its median.{cpu_text} Each rQPS is the geometric mean of "
            f"per-round ratios with a 95% Student-t interval on their logarithms; {flagged} of "
            f"{len(data['rows'])} microbenchmark results exclude 1.0, the others are marked 'no difference'"
            f" (rCPU: {flagged_cpu} of {len(rows_cpu)}). Wall-clock QPS here is bounded by client and kernel "
            f"round trips, so server CPU time per query (rCPU) shows a build's own effect more directly.")


def group_estimate(table: dict, how: str) -> stats.Estimate:
    return stats.Estimate(table[how], table[f"{how}_low"], table[f"{how}_high"], table["rounds"])


def _fmt(e: stats.Estimate | None) -> str:
    return "n/a" if e is None else e.fmt()


def markdown(data: dict) -> str:
    run = data["run"]
    out = [f"# pgolab run `{run['name']}`", "",
           f"Server: {run['server']}; base: `{data['base']}`; suite: {run['suite']}; "
           f"{data['measurements']} measurements; status: {run['status']}.", "",
           "## Per variant (over all microbenchmarks)", "",
           "| variant | avg rQPS [95% CI] | median rQPS [95% CI] | verdict (avg) "
           "| avg rCPU [95% CI] | median rCPU [95% CI] | verdict (avg rCPU) |", "|---|---|---|---|---|---|---|"]
    for label, s in data["summaries"].items():
        cpu = s.get("cpu_avg")
        out.append(f"| {label} | {_fmt(s['avg'])} | {_fmt(s['median'])} | {s['avg'].verdict()} "
                   f"| {_fmt(cpu)} | {_fmt(s.get('cpu_median'))} | {cpu.verdict() if cpu else 'n/a'} |")
    for metric, title in (("qps", "rQPS"), ("cpu", "rCPU: server CPU per query, base / variant")):
        out += ["", f"## Per group ({title})", "",
                "| group | variant | min | max | avg [95% CI] | median [95% CI] | verdict (avg) |",
                "|---|---|---|---|---|---|---|"]
        for (group, label, m), g in data["groups"].items():
            if m == metric:
                avg, median = group_estimate(g, "avg"), group_estimate(g, "median")
                out.append(f"| {group} | {label} | {g['min']:.3f} | {g['max']:.3f} | {avg.fmt()} "
                           f"| {median.fmt()} | {avg.verdict()} |")
    out += ["", "## Per microbenchmark", "",
            "| group | microbenchmark | variant | rQPS [95% CI] | verdict | rCPU [95% CI] | QPS (median) | QPS spread |",
            "|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        out.append(f"| {r.group} | {r.micro.split('/', 1)[1]} | {r.label} | {_fmt(r.rqps)} | {r.rqps.verdict()} | "
                   f"{_fmt(r.rcpu)} | {r.qps_median:.0f} | {r.qps_spread * 100:.0f}% |")
    out += ["", "## Noise", "", noise_statement(data), "", "## Targets", ""]
    for t in data["targets"]:
        desc = json.loads(t["description"])
        line = (f"- `{t['label']}` ({t['kind']}): `{t['server_binary']}` — "
                f"{desc.get('description') or desc.get('version') or ''}")
        if desc.get("training"):
            line += f"; trained with `{desc['training']}`"
        if desc.get("profile_check"):
            pc = desc["profile_check"]
            line += f"; profile overlap with {pc['benchmark']}: {pc['overlap'] * 100:.1f}%"
        out.append(line)
    host = json.loads(run["host"])
    out += ["", "## Host", "", f"{host['cpu']}, {host['cores']} cores, {host['memory_gib']} GiB, "
            f"kernel {host['kernel']}", "", "## Commands", ""]
    out += [f"    {c}" for c in json.loads(run["commands"])]
    return "\n".join(out) + "\n"


def rows_as_dicts(data: dict) -> list[dict]:
    out = []
    for r in data["rows"]:
        out.append({"group": r.group, "microbenchmark": r.micro.split("/", 1)[1], "variant": r.label,
                    "rqps": r.rqps.value, "rqps_low": r.rqps.low, "rqps_high": r.rqps.high,
                    "verdict": r.rqps.verdict(), "rounds": r.rqps.rounds,
                    "rcpu": r.rcpu.value if r.rcpu else None, "rcpu_low": r.rcpu.low if r.rcpu else None,
                    "rcpu_high": r.rcpu.high if r.rcpu else None, "qps_median": r.qps_median,
                    "qps_spread": r.qps_spread})
    return out


def to_json(data: dict) -> str:
    return json.dumps({
        "run": {k: (json.loads(v) if k in ("options", "host", "commands") else v) for k, v in data["run"].items()},
        "base": data["base"],
        "summaries": {l: {k: vars(e) | {"verdict": e.verdict()} for k, e in s.items()}
                      for l, s in data["summaries"].items()},
        "groups": [{"group": g, "variant": l, "metric": "rqps" if m == "qps" else "rcpu", **v}
                   for (g, l, m), v in data["groups"].items()],
        "rows": rows_as_dicts(data),
        "noise": noise_statement(data),
    }, indent=2)


def to_csv(data: dict) -> str:
    buf = io.StringIO()
    rows = rows_as_dicts(data)
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["group"])
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def charts(data: dict, out_dir: Path, metric: str = "qps") -> list[Path]:
    """One PNG per group: the metric per microbenchmark per variant, with 95% whiskers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for group in GROUPS:
        rows = [r for r in data["rows"] if r.group == group]
        est = lambda r: r.rqps if metric == "qps" else r.rcpu
        rows = [r for r in rows if est(r) is not None]
        if not rows:
            continue
        micros = list(dict.fromkeys(r.micro.split("/", 1)[1] for r in rows))
        labels = data["labels"]
        width = 0.8 / max(len(labels), 1)
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(micros) + 2), 5.5))
        values_seen = []
        for i, label in enumerate(labels):
            xs, ys, lo, hi = [], [], [], []
            for j, micro in enumerate(micros):
                match = [r for r in rows if r.label == label and r.micro.endswith("/" + micro)]
                if not match:
                    continue
                e = est(match[0])
                xs.append(j + (i - (len(labels) - 1) / 2) * width)
                ys.append(e.value)
                lo.append(e.value - (e.low if e.low is not None else e.value))
                hi.append((e.high if e.high is not None else e.value) - e.value)
                values_seen += [e.low or e.value, e.high or e.value]
            ax.bar(xs, ys, width=width, label=label, yerr=[lo, hi], capsize=3)
        ax.axhline(1.0, color="black", linewidth=0.8)
        low = min(values_seen + [1.0])
        high = max(values_seen + [1.0])
        pad = (high - low) * 0.1 + 0.02
        ax.set_ylim(max(0, low - pad), high + pad)
        ax.set_xticks(range(len(micros)))
        ax.set_xticklabels(micros, rotation=40, ha="right", fontsize=9)
        ax.set_ylabel(METRICS[metric] + (" — y-axis does not start at 0" if low - pad > 0 else ""))
        ax.set_title(f"{group}: {METRICS[metric]} vs {data['base']} (95% CI whiskers)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{metric}-{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def html_page(data: dict, chart_paths: list[Path]) -> str:
    md = markdown(data)
    images = "".join(
        f'<h3>{html.escape(p.stem)}</h3><img alt="{html.escape(p.stem)}" '
        f'src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">' for p in chart_paths)
    table_rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            r.group, r.micro.split("/", 1)[1], r.label, _fmt(r.rqps), r.rqps.verdict(), _fmt(r.rcpu))) + "</tr>"
        for r in data["rows"])
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>pgolab {html.escape(data['run']['name'])}</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}} td,th{{border:1px solid #ccc;padding:2px 6px}}
table{{border-collapse:collapse}} img{{max-width:100%}} pre{{white-space:pre-wrap}}</style></head><body>
<h1>pgolab run {html.escape(data['run']['name'])}</h1>
<h2>Charts</h2>{images}
<h2>Per microbenchmark</h2><table><tr><th>group</th><th>microbenchmark</th><th>variant</th><th>rQPS [95% CI]</th>
<th>verdict</th><th>rCPU [95% CI]</th></tr>{table_rows}</table>
<h2>Full report</h2><pre>{html.escape(md)}</pre></body></html>"""


def export(data: dict, out_dir: Path) -> dict[str, Path]:
    """Every format into one folder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"markdown": out_dir / "report.md", "csv": out_dir / "results.csv", "json": out_dir / "results.json"}
    files["markdown"].write_text(markdown(data))
    files["csv"].write_text(to_csv(data))
    files["json"].write_text(to_json(data))
    pngs = charts(data, out_dir, "qps") + charts(data, out_dir, "cpu")
    files["html"] = out_dir / "report.html"
    files["html"].write_text(html_page(data, pngs))
    for p in pngs:
        files[p.stem] = p
    return files
