"""PNG plots of a run (matplotlib is optional: ``pip install bigvocab[plot]``).

* ``speedup_vs_vocab.png`` -- training speed-up over ``full`` against V, log-log, with the
  interquartile range of the paired ratios as error bars.
* ``perplexity_vs_time.png`` -- exact test perplexity (as a ratio to the floor where it is known)
  against training wall time, one curve per layer (its label at the curve's end, moved apart from
  its neighbours' where curves end close together, and in the legend), one panel per corpus.
"""

from __future__ import annotations

import math
from pathlib import Path

from bigvocab.bench.rows import QualityRow, SpeedRow

MISSING_MATPLOTLIB = "matplotlib is not installed, so no plots were drawn (pip install 'bigvocab[plot]')"


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(results: dict, out_dir: Path) -> tuple[list[Path], list[str]]:
    """(paths written, notes); without matplotlib no path and a note saying why."""
    plt = _pyplot()
    if plt is None:
        return [], [MISSING_MATPLOTLIB]
    written = []
    ok_speed = [r for r in results.get("speed", []) if r.timings.get("train") is not None]
    if ok_speed:
        written.append(_speedup_plot(plt, ok_speed, out_dir / "speedup_vs_vocab.png"))
    ok_quality = [r for r in results.get("quality", []) if r.test_ppl is not None]
    if ok_quality:
        written.append(_perplexity_plot(plt, ok_quality, out_dir / "perplexity_vs_time.png"))
    return written, []


def _style(plt, index: int) -> dict:
    """Twenty colours, then a different marker and dash: seventeen rows stay distinguishable."""
    markers, dashes = "osD^v<>", ["-", "--", ":"]
    return {"color": plt.cm.tab20(index % 20), "marker": markers[index % 7], "linestyle": dashes[index // 7 % 3]}


def _speedup_plot(plt, rows: list[SpeedRow], path: Path) -> Path:
    figure, axes = plt.subplots(figsize=(8, 5.5))
    for index, label in enumerate(dict.fromkeys(r.approach for r in rows)):
        mine = sorted((r for r in rows if r.approach == label), key=lambda r: r.vocab_size)
        sizes = [r.vocab_size for r in mine]
        trains = [r.timings["train"] for r in mine]
        medians = [t.speedup for t in trains]
        below = [t.speedup - t.q1 for t in trains]
        above = [t.q3 - t.speedup for t in trains]
        axes.errorbar(sizes, medians, yerr=[below, above], capsize=3, label=label, **_style(plt, index))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlabel("vocabulary size V")
    axes.set_ylabel("training speed-up over full softmax")
    axes.set_title("Training step speed-up (median of paired ratios, IQR bars)")
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _perplexity_plot(plt, rows: list[QualityRow], path: Path) -> Path:
    datasets = list(dict.fromkeys(r.dataset for r in rows))
    figure, panels = plt.subplots(1, len(datasets), figsize=(7 * len(datasets), 5.5), squeeze=False)
    labels = list(dict.fromkeys(r.approach for r in rows))
    for axes, dataset in zip(panels[0], datasets):
        mine = [r for r in rows if r.dataset == dataset]
        relative = all(p.ppl_ratio is not None for r in mine for p in r.curve)
        for row in mine:
            times = [p.train_seconds for p in row.curve]
            values = [p.ppl_ratio if relative else p.test_ppl for p in row.curve]
            axes.plot(times, values, label=row.approach, markersize=4, **_style(plt, labels.index(row.approach)))
        if relative:
            axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        axes.set_xscale("log")
        axes.set_yscale("log")  # a diverged layer sits orders of magnitude above the rest
        ends = [(r.curve[-1], r.approach) for r in mine]
        _label_curve_ends(axes, [(label, p.train_seconds, p.ppl_ratio if relative else p.test_ppl) for p, label in ends])
        axes.set_xlabel("training wall time (s)")
        axes.set_ylabel("exact test perplexity / floor" if relative else "exact test perplexity")
        axes.set_title(dataset)
        axes.legend(fontsize=6, ncol=2, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


#: the least vertical distance between two end labels, as a fraction of the (log) y-axis: a
#: 7-point line is about 2% of the 5.5-inch figure's axes.
_LABEL_GAP = 0.03


def _label_curve_ends(axes, ends: list[tuple[str, float, float]]) -> None:
    """Write each curve's label (label, x, y) right of its last point on log-log axes, moved
    vertically just enough that no two labels overlap, with a thin line back to the point when moved."""
    low, high = (math.log10(v) for v in axes.get_ylim())
    heights = spread_labels([math.log10(y) for _, _, y in ends], _LABEL_GAP * (high - low))
    for (label, x, y), height in zip(ends, heights):
        moved = abs(height - math.log10(y)) > 1e-9
        axes.annotate(
            label, (x, y), xytext=(x * 1.05, 10**height), textcoords="data", fontsize=7, va="center",
            arrowprops={"arrowstyle": "-", "linewidth": 0.4, "color": "grey"} if moved else None,
        )


def spread_labels(positions: list[float], gap: float) -> list[float]:
    """Label positions on one axis, each as near its wanted position as it can be with at least
    ``gap`` between any two: labels that would crowd form a run spaced ``gap`` apart, centred on
    the mean of their wanted positions (runs that then touch merge). Returned in input order."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    runs: list[tuple[float, list[int]]] = []  # (position of the run's first label, members)
    for index in order:
        runs.append((positions[index], [index]))
        while len(runs) > 1 and runs[-2][0] + len(runs[-2][1]) * gap > runs[-1][0]:
            members = runs[-2][1] + runs.pop()[1]
            centre = sum(positions[i] for i in members) / len(members)
            runs[-1] = (centre - (len(members) - 1) * gap / 2, members)
    placed = [0.0] * len(positions)
    for start, members in runs:
        for rank, index in enumerate(members):
            placed[index] = start + rank * gap
    return placed
