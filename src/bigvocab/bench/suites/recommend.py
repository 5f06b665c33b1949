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

A budget can be too short to rank layers at all, and the line then says so instead of naming a
winner (``ranked`` False, the reason in ``verdict``): when the validation perplexity of most
layers rose since the previous checkpoint (they overfit the data the time lets them see), or
when other layers came within the seed-to-seed spread of the best -- the spread of the reference
layer's runs with different seeds (``seed_repeats`` of the quality settings), the noise that
separates nothing.
"""

from __future__ import annotations

from typing import cast

from bigvocab.bench.harness.rows import QualityRow

#: "Within 5% of the best": perplexity at most (1 + TOLERANCE) times the lowest.
TOLERANCE = 0.05
#: ``selection`` of a line whose figures are the best-on-validation checkpoints.
ON_VALIDATION = "best validation checkpoint"
#: ``selection`` of a line whose figures are the checkpoints at the budget.
AT_BUDGET = "at the budget"


def recommend(quality_rows: list[QualityRow], tolerance: float = TOLERANCE) -> list[dict]:
    """One line per (corpus, budget): ``dataset``, ``vocab_size``, ``budget_seconds``,
    ``selection`` (:data:`ON_VALIDATION` or :data:`AT_BUDGET`; ``on_validation`` True for the
    first), ``best`` (label), ``best_ppl``,
    ``best_ratio``, ``best_checkpoint`` (the budget of the checkpoint behind ``best_ppl``),
    ``fastest`` (label) and ``fastest_seconds`` (training time of the first checkpoint whose
    kept model came within ``tolerance`` of ``best_ppl``), ``seed_spread`` (the reference's runs'
    highest kept perplexity over their lowest, minus 1; None without repeated runs), ``tied``
    (the other layers within that spread of the best), ``rising`` (the layers whose validation
    perplexity rose since the previous checkpoint, of ``layers``), ``ranked`` and ``verdict``
    (None when ranked, else why not).

    Rows with ``repeat`` > 0 (the reference again with other seeds) are not ranked: they give the
    spread."""
    lines = []
    for dataset in dict.fromkeys(row.dataset for row in quality_rows):
        usable = [r for r in quality_rows if r.dataset == dataset and r.status == "ok" and r.curve]
        rows = [r for r in usable if not r.repeat]
        if not rows:
            continue
        repeats = [r for r in usable if r.repeat]
        on_validation = all(point.valid_ppl is not None for row in rows for point in row.curve)
        budgets = sorted({point.budget_seconds for row in rows for point in row.curve})
        for budget in budgets:
            points = {row.approach: row.kept_point(budget, on_validation) for row in rows}
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
            spread = seed_spread(rows, repeats, budget, on_validation)
            tied = (
                []
                if spread is None
                else [
                    label
                    for label, point in kept.items()
                    if label != best and point.test_ppl <= (1 + spread) * best_ppl
                ]
            )
            rising = [row.approach for row in rows if _rose(row, budget)]
            verdict = _verdict(best, tied, spread, len(rising), len(rows))
            lines.append(
                {
                    "dataset": dataset,
                    "vocab_size": rows[0].vocab_size,
                    "budget_seconds": budget,
                    "selection": ON_VALIDATION if on_validation else AT_BUDGET,
                    "on_validation": on_validation,
                    "best": best,
                    "best_ppl": best_ppl,
                    "best_ratio": kept[best].ppl_ratio,
                    "best_checkpoint": kept[best].budget_seconds,
                    "fastest": fastest,
                    "fastest_seconds": reached[fastest],
                    "seed_spread": spread,
                    "tied": tied,
                    "rising": len(rising),
                    "layers": len(rows),
                    "ranked": verdict is None,
                    "verdict": verdict,
                }
            )
    return lines


def _first_within(row: QualityRow, budget: float, limit: float, on_validation: bool) -> float | None:
    """Training seconds of the row's first checkpoint, within ``budget``, whose kept model is at or
    below ``limit``. (The first budget whose kept model is within the limit keeps its own point:
    an earlier point kept there would have been kept, and within the limit, at its own budget.)"""
    for point in row.curve:
        if point.budget_seconds > budget:
            break
        kept = row.kept_point(point.budget_seconds, on_validation)
        if kept is not None and kept.test_ppl <= limit:
            return kept.train_seconds
    return None


def seed_spread(rows: list[QualityRow], repeats: list[QualityRow], budget: float, on_validation: bool) -> float | None:
    """The kept perplexities at ``budget`` of the reference layer's run and of its ``repeats``
    (other seeds): the highest over the lowest, minus 1; None without a repeat of a row in ``rows``."""
    runs = [row for row in rows if any(repeat.method == row.method and repeat.kind == row.kind for repeat in repeats)]
    points = [row.kept_point(budget, on_validation) for row in runs[:1] + repeats]
    values = [point.test_ppl for point in points if point is not None]
    if len(values) < 2:
        return None
    return max(values) / min(values) - 1


def _rose(row: QualityRow, budget: float) -> bool:
    """Whether the validation perplexity at ``budget`` is above the previous checkpoint's."""
    due = [point for point in row.curve if point.budget_seconds <= budget]
    if len(due) < 2 or due[-1].budget_seconds != budget or None in (due[-1].valid_ppl, due[-2].valid_ppl):
        return False
    return cast(float, due[-1].valid_ppl) > cast(float, due[-2].valid_ppl)


def _verdict(best: str, tied: list[str], spread: float | None, rising: int, layers: int) -> str | None:
    """Why the layers cannot be ranked at a budget, in words; None when they can."""
    if layers > 1 and 2 * rising > layers:
        return (
            f"validation perplexity rose since the previous checkpoint for {rising} of {layers} layers: they "
            "overfit the data this time lets them see"
        )
    if tied:
        return f"{', '.join([best, *tied])} are within the seed-to-seed spread ({spread:.1%}) of each other"
    return None
