"""PNG plots of a run (matplotlib is optional: ``pip install bigvocab[plot]``).

* ``speedup_vs_vocab.png`` -- training speed-up over ``full`` against V, log-log, with the
  interquartile range of the paired ratios as error bars, the legend beside the axes.
* ``perplexity_vs_time.png`` -- exact test perplexity (as a ratio to the floor where it is known)
  against training wall time, one curve per layer (its label at the curve's end, moved apart from
  its neighbours' where curves end close together but kept inside the panel, and in one legend
  below the panels, clear of the curves), one panel per corpus, ticks at the time budgets; a
  ring marks each layer's checkpoint with the lowest validation perplexity, where it was measured
  (the model early stopping keeps, which the recommendation quotes).
* ``recommendation.png`` -- the recommendation drawn: one panel per corpus (so per vocabulary
  size), the kept model's perplexity of every layer at each time budget (grey), the best layer's
  named in its colour, the seed-to-seed spread as a band about it, and "cannot rank" where the
  budget could not separate the layers.
* ``recall_vs_speedup.png`` (``bench --ann``) -- recall@k against the speed-up over exact top-k,
  one curve per index kind and build, along its search knob.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

from bigvocab.bench.harness.rows import QualityRow, SpeedRow
from bigvocab.outputs.factory import reference_output

#: The files :func:`write_plots` may draw.
PLOT_FILES = ("speedup_vs_vocab.png", "perplexity_vs_time.png", "recommendation.png")

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
    if results.get("recommendation") and ok_quality:
        written.append(_recommendation_plot(plt, results["recommendation"], ok_quality, out_dir / "recommendation.png"))
    return written, []


def _style(plt, index: int) -> dict:
    """Twenty colours, then a different marker and dash: seventeen rows stay distinguishable."""
    markers, dashes = "osD^v<>", ["-", "--", ":"]
    return {"color": plt.cm.tab20(index % 20), "marker": markers[index % 7], "linestyle": dashes[index // 7 % 3]}


def _speedup_plot(plt, rows: list[SpeedRow], path: Path) -> Path:
    figure, axes = plt.subplots(figsize=(10, 5.5))
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
    axes.set_ylabel(f"training speed-up over {reference_output()}")
    axes.set_title("Training step speed-up (median of paired ratios, IQR bars)")
    # Beside the axes, not on them: twenty rows of legend would hide the curves they name.
    axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _perplexity_plot(plt, rows: list[QualityRow], path: Path) -> Path:
    datasets = list(dict.fromkeys(r.dataset for r in rows))
    labels = list(dict.fromkeys(r.approach for r in rows))
    legend_rows = math.ceil((len(labels) + 1) / min(_LEGEND_COLUMNS, _LEGEND_COLUMNS_PER_PANEL * len(datasets)))
    # The legend sits below the panels, so it never hides a curve; the figure grows to hold it.
    legend_inches = 0.3 + 0.17 * legend_rows
    figure, panels = plt.subplots(1, len(datasets), figsize=(7.5 * len(datasets), 5.5 + legend_inches), squeeze=False)
    for axes, dataset in zip(panels[0], datasets):
        mine = [r for r in rows if r.dataset == dataset]
        relative = all(p.ppl_ratio is not None for r in mine for p in r.curve)
        for row in mine:
            times = [p.train_seconds for p in row.curve]
            values = [p.ppl_ratio if relative else p.test_ppl for p in row.curve]
            style = _style(plt, labels.index(row.approach))
            axes.plot(times, values, label=row.approach, markersize=4, **style)
            kept = row.best_on_validation()
            if kept is not None:
                axes.plot(
                    kept.train_seconds,
                    kept.ppl_ratio if relative else kept.test_ppl,
                    marker="o",
                    markersize=10,
                    markerfacecolor="none",
                    markeredgecolor=style["color"],
                    linestyle="none",
                    label=_KEPT_LABEL,
                )
        if relative:
            axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        axes.set_xscale("log")
        axes.set_yscale("log")
        _tick_at_budgets(axes, sorted({p.budget_seconds for r in mine for p in r.curve}))
        # relative: every point has a ratio
        curves = [[cast(float, p.ppl_ratio) if relative else p.test_ppl for p in r.curve] for r in mine]
        top = _clip_top(axes, [v for curve in curves for v in curve])
        ends = [
            (
                r.approach if v[-1] <= top else f"{r.approach} (off the scale)",
                r.curve[-1].train_seconds,
                min(v[-1], top),
            )
            for r, v in zip(mine, curves)
        ]
        _label_curve_ends(axes, ends)
        axes.set_xlabel("training wall time (s)")
        axes.set_ylabel("exact test perplexity / floor" if relative else "exact test perplexity")
        axes.set_title(dataset)
    handles, names = [], []
    for axes in panels[0]:  # a layer that ran on one corpus only still gets its entry (and the ring one)
        for handle, name in zip(*axes.get_legend_handles_labels()):
            if name not in names:
                handles.append(handle)
                names.append(name)
    if _KEPT_LABEL in names:  # after the layers' entries, not among them
        where = names.index(_KEPT_LABEL)
        handles.append(handles.pop(where))
        names.append(names.pop(where))
    columns = min(_LEGEND_COLUMNS, _LEGEND_COLUMNS_PER_PANEL * len(datasets))
    figure.legend(handles, names, loc="lower center", ncol=columns, fontsize=7, frameon=False)
    figure.tight_layout(rect=(0, legend_inches / figure.get_figheight(), 1, 1))
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


#: legend entry of the rings at the checkpoints kept on validation.
_KEPT_LABEL = "lowest validation perplexity (kept)"


#: the least vertical distance between two end labels, as a fraction of the (log) y-axis: a
#: 7-point line is about 2% of the 5.5-inch figure's axes.
_LABEL_GAP = 0.03

#: entries per row of the shared legend below the panels, at most, and as many as one panel's
#: width holds.
_LEGEND_COLUMNS = 6
_LEGEND_COLUMNS_PER_PANEL = 4


#: A curve this many times above the lowest perplexity of its panel is drawn off the scale: one
#: diverged layer (1e12 times the floor) would otherwise flatten every other curve.
_OFF_SCALE = 100.0


def _clip_top(axes, values: list[float]) -> float:
    """Set the log y axis's top to the highest of ``values`` within :data:`_OFF_SCALE` times the
    lowest (with a margin); returns the highest value kept on the scale."""
    low = min(values)
    top = max(v for v in values if v <= _OFF_SCALE * low)
    if max(values) > top:
        axes.set_ylim(top=top * 1.5)
    return top


def _tick_at_budgets(axes, times: list[float]) -> None:
    """x ticks at the training budgets where the perplexity was measured, in plain seconds (a log axis
    over less than a decade otherwise prints crowded labels such as 4x10^2)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    axes.xaxis.set_major_locator(FixedLocator(times))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.set_xticklabels([f"{t:g}" for t in times])


def _label_curve_ends(axes, ends: list[tuple[str, float, float]]) -> None:
    """Write each curve's label (label, x, y) right of its last point on log-log axes, moved
    vertically just enough that no two labels overlap and none leaves the panel's height, with a
    thin line back to the point when moved."""
    low, high = (math.log10(v) for v in axes.get_ylim())
    heights = spread_labels([math.log10(y) for _, _, y in ends], _LABEL_GAP * (high - low), bounds=(low, high))
    for (label, x, y), height in zip(ends, heights):
        moved = abs(height - math.log10(y)) > 1e-9
        axes.annotate(
            label,
            (x, y),
            xytext=(x * 1.05, 10**height),
            textcoords="data",
            fontsize=7,
            va="center",
            arrowprops={"arrowstyle": "-", "linewidth": 0.4, "color": "grey"} if moved else None,
        )


def spread_labels(positions: list[float], gap: float, bounds: tuple[float, float] | None = None) -> list[float]:
    """Label positions on one axis, each as near its wanted position as it can be with at least
    ``gap`` between any two: labels that would crowd form a run spaced ``gap`` apart, centred on
    the mean of their wanted positions (runs that then touch merge). With ``bounds`` (low, high)
    the labels are then pushed inside them, the gap shrinking if all of them cannot otherwise fit;
    their order is kept. Returned in input order."""
    if bounds is not None and len(positions) > 1:
        gap = min(gap, (bounds[1] - bounds[0]) / (len(positions) - 1))
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
    if bounds is not None:
        _push_inside(placed, order, gap, bounds)
    return placed


def _push_inside(placed: list[float], order: list[int], gap: float, bounds: tuple[float, float]) -> None:
    """Move labels spaced at least ``gap`` apart (``order`` lists them from lowest to highest) up
    from below ``bounds[0]``, then down from above ``bounds[1]``, each pushing its neighbours."""
    low, high = bounds
    floor = low
    for index in order:
        placed[index] = max(placed[index], floor)
        floor = placed[index] + gap
    ceiling = high
    for index in reversed(order):
        placed[index] = min(placed[index], ceiling)
        ceiling = placed[index] - gap


def _recommendation_plot(plt, lines: list[dict], rows: list[QualityRow], path: Path) -> Path:
    datasets = list(dict.fromkeys(line["dataset"] for line in lines))
    labels = list(dict.fromkeys(r.approach for r in rows))
    figure, panels = plt.subplots(1, len(datasets), figsize=(6.5 * len(datasets), 5), squeeze=False)
    for axes, dataset in zip(panels[0], datasets):
        mine = [line for line in lines if line["dataset"] == dataset]
        ranked = [r for r in rows if r.dataset == dataset and not r.repeat and r.status == "ok"]
        relative = all(p.ppl_ratio is not None for r in ranked for p in r.curve)
        on_validation = mine[0]["on_validation"]

        budgets = [line["budget_seconds"] for line in mine]
        drawn: list[float] = []
        for row in ranked:
            kept = [row.kept_point(budget, on_validation) for budget in budgets]
            shown = [(b, cast(float, p.ppl_ratio) if relative else p.test_ppl) for b, p in zip(budgets, kept) if p]
            axes.plot(*zip(*shown), color="0.8", linewidth=0.8, marker=".", zorder=1)
            drawn += [value for _, value in shown]
        best = [line["best_ratio"] if relative else line["best_ppl"] for line in mine]
        spreads = [line.get("seed_spread") for line in mine]
        if all(spread is not None for spread in spreads):
            low = [b / (1 + cast(float, s)) for b, s in zip(best, spreads)]
            high = [b * (1 + cast(float, s)) for b, s in zip(best, spreads)]
            axes.fill_between(budgets, low, high, color="0.85", alpha=0.6, zorder=0, label="seed-to-seed spread")
            axes.legend(fontsize=7, loc="upper right")
        axes.plot(budgets, best, color="black", linewidth=1.2, zorder=2)
        for line, budget, y in zip(mine, budgets, best):
            if line.get("ranked", True):
                color = _style(plt, labels.index(line["best"]))["color"]
                axes.plot(budget, y, marker="o", markersize=9, color=color, zorder=3)
                text = line["best"]
            else:
                axes.plot(budget, y, marker="o", markersize=9, markerfacecolor="white", color="black", zorder=3)
                text = "cannot rank:\n" + _why_unranked(line)
            axes.annotate(text, (budget, y), xytext=(0, 10), textcoords="offset points", ha="center", fontsize=7)
        if relative:
            axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        axes.set_xscale("log")
        axes.set_yscale("log")
        _clip_top(axes, best + drawn)
        _tick_at_budgets(axes, budgets)
        axes.set_xlim(budgets[0] / 1.4, budgets[-1] * 1.4)  # room for the names above the first and last points
        axes.set_xlabel("training time budget (s)")
        axes.set_ylabel("kept model's exact test perplexity" + (" / floor" if relative else ""))
        axes.set_title(f"{dataset}: best layer per budget (V = {mine[0]['vocab_size']:,})", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write_recall_plot(results: dict, path: Path) -> Path | None:
    """``bench --ann``'s curves: recall@k against the speed-up (log). One curve per kind, build
    and setting of its other search options, along the search option it sweeps most (``nprobe``,
    ``rank``, ``budget``...); None without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(figsize=(9, 6))
    groups: dict[str, list[dict]] = {}
    for row in results["rows"]:
        build = ", ".join(f"{key}={value}" for key, value in row["build"].items() if key != "seed")
        groups.setdefault(f"{row['kind']} ({build})" if build else row["kind"], []).append(row)
    curves: dict[str, list[dict]] = {}
    for label, rows in groups.items():
        knob = max(rows[0]["search"], key=lambda name: len({str(r["search"][name]) for r in rows}), default=None)
        for row in rows:
            fixed = ", ".join(f"{key}={value}" for key, value in row["search"].items() if key != knob)
            curves.setdefault(f"{label} {fixed} ({knob})" if knob else label, []).append(row)
    for index, (label, rows) in enumerate(curves.items()):
        axes.plot([r["speedup"] for r in rows], [r["recall"] for r in rows], label=label, **_style(plt, index))
    axes.set_xscale("log")
    axes.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    axes.axhline(0.95, color="grey", linewidth=0.8, linestyle=":")
    k = results["config"]["k"]
    axes.set_xlabel(f"speed-up over exact top-{k} (median of paired ratios)")
    axes.set_ylabel(f"recall@{k}")
    axes.set_title(f"Approximate top-{k}: each curve sweeps one search option (in brackets)")
    axes.legend(fontsize=6, loc="lower left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _why_unranked(line: dict) -> str:
    """Short enough to sit above a point: the tied layers (three at most), or that most overfit."""
    if not line.get("tied"):
        return f"{line['rising']} of {line['layers']} overfit"
    tied = [line["best"], *line["tied"]]
    shown = "\n".join(tied[:3])
    return shown + (f"\n+{len(tied) - 3} more" if len(tied) > 3 else "")
