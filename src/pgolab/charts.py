"""PNG charts of the report's estimates: one per figure and group, all the same size; and a thread
sweep's levels against the thread count, one line per build.

Estimates are dots with their 95% whiskers around a line at 1.0. The y-range covers
the estimates and their typical whiskers; one that reaches far beyond (a noisy
microbenchmark) is cut at the edge and marked with a triangle and its end value, so it
cannot flatten every other estimate of its chart.
"""

from __future__ import annotations

from pathlib import Path

from .document import Chart, LineChart

WIDTH_PER_MICRO = 0.9
HEIGHT = 5.0


def y_limits(estimates: list) -> tuple[float, float]:
    """Around the estimates, their typical whiskers and 1.0; a whisker longer than three times the
    median one is cut at the edge rather than stretching the axis."""
    values = [e.value for e in estimates]
    lows = [e.low for e in estimates if e.low is not None]
    highs = [e.high for e in estimates if e.high is not None]
    halves = sorted((e.high - e.low) / 2 for e in estimates if e.low is not None)
    reach = 3 * halves[len(halves) // 2] if halves else 0.0
    low = max(min(lows + values), min(values) - reach)
    high = min(max(highs + values), max(values) + reach)
    low, high = min(low, 1.0), max(high, 1.0)
    pad = max(high - low, 0.02) * 0.08
    return low - pad, high + pad


def draw(charts: list[Chart | LineChart], out_dir: Path) -> dict[str, Path]:
    if not charts:
        return {}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratio_charts = [c for c in charts if isinstance(c, Chart)]
    widest = max((len(c.micros) for c in ratio_charts), default=1)
    width = max(6.0, WIDTH_PER_MICRO * widest + 2.5)     # one width for every chart
    out: dict[str, Path] = {}
    for chart in charts:
        fig, ax = plt.subplots(figsize=(width, HEIGHT))
        if isinstance(chart, LineChart):
            _levels(ax, chart)
        else:
            _ratios(ax, chart, widest)
        fig.tight_layout()
        path = out_dir / f"{chart.key}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        out[chart.key] = path
    return out


def _levels(ax, chart: LineChart) -> None:
    for i, (label, values) in enumerate(chart.series.items()):
        points = [(x, y) for x, y in zip(chart.xs, values) if y is not None]
        if points:
            ax.plot(*zip(*points), marker="o", color=f"C{i}", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(chart.xs)
    ax.set_xticklabels([f"{x:g}" for x in chart.xs])
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label, fontsize=8)
    ax.set_title(chart.title, fontsize=10)


def _ratios(ax, chart: Chart, widest: int) -> None:
    labels = list(chart.series)
    step = 0.7 / max(len(labels), 1)
    lo_lim, hi_lim = y_limits([e for s in chart.series.values() for e in s if e])
    ax.axhline(1.0, color="black", linewidth=0.8)
    for i, label in enumerate(labels):
        xs, ys, below, above = [], [], [], []
        for j, e in enumerate(chart.series[label]):
            if e is None:
                continue
            x = j + (i - (len(labels) - 1) / 2) * step
            xs.append(x)
            ys.append(e.value)
            low = e.low if e.low is not None else e.value
            high = e.high if e.high is not None else e.value
            below.append(e.value - max(low, lo_lim))
            above.append(min(high, hi_lim) - e.value)
            for end, limit, marker in ((high, hi_lim, "^"), (low, lo_lim, "v")):
                if (marker == "^" and end > limit) or (marker == "v" and end < limit):
                    ax.plot(x, limit, marker=marker, color=f"C{i}", markersize=6)
                    ax.annotate(f"{end:.2f}", (x, limit), fontsize=7, ha="center",
                                xytext=(0, -11 if marker == "^" else 5), textcoords="offset points")
        ax.errorbar(xs, ys, yerr=[below, above], fmt="o", color=f"C{i}", capsize=3, label=label)
    ax.legend(fontsize=8)
    ax.set_ylim(lo_lim, hi_lim)
    ax.set_xlim(-0.6, widest - 0.4)
    ax.set_xticks(range(len(chart.micros)))
    ax.set_xticklabels(chart.micros, rotation=35, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel(f"{chart.figure} (> 1: better than the base)")
    ax.set_title(f"{chart.title}: estimate and 95% interval (▲▼ cut at the edge)", fontsize=10)
