"""The recommendation: lowest perplexity per (corpus, budget), and the first within 5% of it."""

from __future__ import annotations

from bigvocab.bench.recommend import recommend
from bigvocab.bench.rows import CurvePoint, QualityRow


def row(
    label: str, points: list[tuple[float, float]], dataset: str = "synthetic V=100", status: str = "ok"
) -> QualityRow:
    """A quality row whose curve has (training seconds, perplexity) at budgets 1, 2 and 4 s."""
    curve = [
        CurvePoint(budget, seconds, 0, 0, ppl) for budget, (seconds, ppl) in zip((1.0, 2.0, 4.0), points)
    ]
    return QualityRow(dataset, label, label, "layer", 100, 1000, 100, None, 1, curve=curve, status=status)


def test_best_and_fastest_within_five_percent_per_budget():
    rows = [
        row("full", [(1.0, 300.0), (2.0, 150.0), (4.0, 100.0)]),
        # Fast early, slightly worse at the end: within 5% of full's 100 from 2 s on.
        row("hsm", [(1.0, 200.0), (2.0, 103.5), (4.0, 103.0)]),
        # Best at 4 s by a hair, but within 5% of it only then.
        row("nce", [(1.0, 400.0), (2.0, 180.0), (4.0, 99.0)]),
        row("broken", [(1.0, 1.0), (2.0, 1.0), (4.0, 1.0)], status="error"),
    ]
    lines = {line["budget_seconds"]: line for line in recommend(rows)}
    assert sorted(lines) == [1.0, 2.0, 4.0]
    assert (lines[1.0]["best"], lines[1.0]["fastest"], lines[1.0]["fastest_seconds"]) == ("hsm", "hsm", 1.0)
    assert (lines[2.0]["best"], lines[2.0]["best_ppl"], lines[2.0]["fastest"]) == ("hsm", 103.5, "hsm")
    assert (lines[4.0]["best"], lines[4.0]["best_ppl"]) == ("nce", 99.0)
    # 1.05 x 99 = 103.95: hsm was there at 2 s, full and nce only at 4 s.
    assert (lines[4.0]["fastest"], lines[4.0]["fastest_seconds"]) == ("hsm", 2.0)


def test_one_line_per_corpus_and_budget_and_failed_rows_ignored():
    rows = [
        row("full", [(1.0, 10.0), (2.0, 9.0), (4.0, 8.0)], dataset="a"),
        row("full", [(1.0, 20.0), (2.0, 19.0), (4.0, 18.0)], dataset="b"),
        row("hsm", [(1.0, 1.0), (2.0, 1.0), (4.0, 1.0)], dataset="b", status="error"),
    ]
    lines = recommend(rows)
    assert [(line["dataset"], line["budget_seconds"]) for line in lines] == [
        (d, b) for d in "ab" for b in (1.0, 2.0, 4.0)
    ]
    assert all(line["best"] == line["fastest"] == "full" for line in lines)
