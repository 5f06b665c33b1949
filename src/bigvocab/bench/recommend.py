"""The bench's answer: for each corpus and time budget, which layer to use.

From the quality curves (exact test perplexity at fixed fractions of the same training budget,
:mod:`bigvocab.bench.quality`): at each budget, the layer with the lowest perplexity, and the
layer that came within ``tolerance`` (5%) of that best perplexity in the least training time --
the one to choose when time matters more than the last 5%.
"""

from __future__ import annotations

from typing import Optional

from bigvocab.bench.rows import CurvePoint, QualityRow

#: "Within 5% of the best": perplexity at most (1 + TOLERANCE) times the lowest.
TOLERANCE = 0.05


def recommend(quality_rows: list[QualityRow], tolerance: float = TOLERANCE) -> list[dict]:
    """One line per (corpus, budget): ``dataset``, ``vocab_size``, ``budget_seconds``, ``best``
    (label), ``best_ppl``, ``fastest`` (label) and ``fastest_seconds`` (training time at which its
    curve first came within ``tolerance`` of ``best_ppl``)."""
    lines = []
    for dataset in dict.fromkeys(row.dataset for row in quality_rows):
        rows = [r for r in quality_rows if r.dataset == dataset and r.status == "ok" and r.curve]
        if not rows:
            continue
        budgets = sorted({point.budget_seconds for row in rows for point in row.curve})
        for budget in budgets:
            at_budget = {row.approach: _point_at(row, budget) for row in rows}
            measured = {label: point for label, point in at_budget.items() if point is not None}
            if not measured:
                continue
            best = min(measured, key=lambda label: measured[label].test_ppl)
            best_ppl = measured[best].test_ppl
            reached = {row.approach: _first_within(row, budget, (1 + tolerance) * best_ppl) for row in rows}
            reached = {label: seconds for label, seconds in reached.items() if seconds is not None}
            fastest = min(reached, key=reached.get)
            lines.append(
                {
                    "dataset": dataset,
                    "vocab_size": rows[0].vocab_size,
                    "budget_seconds": budget,
                    "best": best,
                    "best_ppl": best_ppl,
                    "best_ratio": measured[best].ppl_ratio,
                    "fastest": fastest,
                    "fastest_seconds": reached[fastest],
                }
            )
    return lines


def _point_at(row: QualityRow, budget: float) -> Optional[CurvePoint]:
    return next((point for point in row.curve if point.budget_seconds == budget), None)


def _first_within(row: QualityRow, budget: float, limit: float) -> Optional[float]:
    """Training seconds of the row's first curve point, within ``budget``, at or below ``limit``."""
    return next((p.train_seconds for p in row.curve if p.budget_seconds <= budget and p.test_ppl <= limit), None)
