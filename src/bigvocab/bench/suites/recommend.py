"""The bench's answer: for each corpus and time budget, which layer to use.

From the quality curves (exact test perplexity at fixed fractions of the same training budget,
:mod:`bigvocab.bench.suites.quality`): at each budget, the layer with the lowest perplexity, and the
layer that came within ``tolerance`` (5%) of that best perplexity in the least training time --
the one to choose when time matters more than the last 5%.

A layer's figure at a budget is the test perplexity of the model a user would keep: where every
curve of the corpus has validation perplexities, the checkpoint (among those due by the budget)
with the lowest validation perplexity, as early stopping keeps (Prechelt 1998, "Early
stopping -- but when?"); a layer that overfits is then judged by its best model, not by the one
its last minutes spoiled. Rows measured before validation was recorded are judged at the budget
itself, and the line says which rule it used.
"""

from __future__ import annotations

from bigvocab.bench.harness.rows import CurvePoint, QualityRow

#: "Within 5% of the best": perplexity at most (1 + TOLERANCE) times the lowest.
TOLERANCE = 0.05
#: ``selection`` of a line whose figures are the best-on-validation checkpoints.
ON_VALIDATION = "best validation checkpoint"
#: ``selection`` of a line whose figures are the checkpoints at the budget.
AT_BUDGET = "at the budget"


def recommend(quality_rows: list[QualityRow], tolerance: float = TOLERANCE) -> list[dict]:
    """One line per (corpus, budget): ``dataset``, ``vocab_size``, ``budget_seconds``,
    ``selection`` (:data:`ON_VALIDATION` or :data:`AT_BUDGET`), ``best`` (label), ``best_ppl``,
    ``best_ratio``, ``best_checkpoint`` (the budget of the checkpoint behind ``best_ppl``),
    ``fastest`` (label) and ``fastest_seconds`` (training time of the first checkpoint whose
    kept model came within ``tolerance`` of ``best_ppl``)."""
    lines = []
    for dataset in dict.fromkeys(row.dataset for row in quality_rows):
        rows = [r for r in quality_rows if r.dataset == dataset and r.status == "ok" and r.curve]
        if not rows:
            continue
        on_validation = all(point.valid_ppl is not None for row in rows for point in row.curve)
        budgets = sorted({point.budget_seconds for row in rows for point in row.curve})
        for budget in budgets:
            points = {row.approach: kept_point(row, budget, on_validation) for row in rows}
            kept = {label: point for label, point in points.items() if point is not None}
            if not kept:
                continue
            best = min(kept, key=lambda label: kept[label].test_ppl)
            best_ppl = kept[best].test_ppl
            firsts = {
                row.approach: _first_within(row, budget, (1 + tolerance) * best_ppl, on_validation) for row in rows
            }
            reached = {label: seconds for label, seconds in firsts.items() if seconds is not None}
            fastest = min(reached, key=reached.__getitem__)
            lines.append(
                {
                    "dataset": dataset,
                    "vocab_size": rows[0].vocab_size,
                    "budget_seconds": budget,
                    "selection": ON_VALIDATION if on_validation else AT_BUDGET,
                    "best": best,
                    "best_ppl": best_ppl,
                    "best_ratio": kept[best].ppl_ratio,
                    "best_checkpoint": kept[best].budget_seconds,
                    "fastest": fastest,
                    "fastest_seconds": reached[fastest],
                }
            )
    return lines


def kept_point(row: QualityRow, budget: float, on_validation: bool) -> CurvePoint | None:
    """The checkpoint of ``row`` a user with ``budget`` seconds keeps: the lowest validation
    perplexity among those due by ``budget`` (``on_validation``), else the one at ``budget``;
    None when the curve has no point at ``budget``."""
    at_budget = next((point for point in row.curve if point.budget_seconds == budget), None)
    if at_budget is None or not on_validation:
        return at_budget
    return row.best_on_validation(budget)


def _first_within(row: QualityRow, budget: float, limit: float, on_validation: bool) -> float | None:
    """Training seconds of the row's first checkpoint, within ``budget``, whose kept model is at or
    below ``limit``. (The first budget whose kept model is within the limit keeps its own point:
    an earlier point kept there would have been kept, and within the limit, at its own budget.)"""
    for point in row.curve:
        if point.budget_seconds > budget:
            break
        kept = kept_point(row, point.budget_seconds, on_validation)
        if kept is not None and kept.test_ppl <= limit:
            return kept.train_seconds
    return None
