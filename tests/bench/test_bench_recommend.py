"""The recommendation: lowest perplexity per (corpus, budget), and the first within 5% of it."""

from __future__ import annotations

from bigvocab.bench.harness.rows import CurvePoint, QualityRow
from bigvocab.bench.suites.recommend import AT_BUDGET, ON_VALIDATION, recommend


def row(
    label: str,
    points: list[tuple[float, float]],
    dataset: str = "synthetic V=100",
    status: str = "ok",
    valid: list[float] | None = None,
) -> QualityRow:
    """A quality row whose curve has (training seconds, test perplexity) at budgets 1, 2 and 4 s,
    and the validation perplexities ``valid`` when given."""
    valid = valid or [None] * len(points)
    curve = [
        CurvePoint(budget, seconds, 0, 0, ppl, valid_ppl=v)
        for budget, (seconds, ppl), v in zip((1.0, 2.0, 4.0), points, valid)
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


def test_with_validation_an_overfitting_layer_is_judged_by_its_best_validation_checkpoint():
    rows = [
        row("full", [(1.0, 300.0), (2.0, 150.0), (4.0, 110.0)], valid=[310.0, 160.0, 115.0]),
        # Best at 1 s, then overfits: validation sees it, so 100 is what early stopping keeps.
        row("hsm", [(1.0, 100.0), (2.0, 140.0), (4.0, 200.0)], valid=[105.0, 150.0, 210.0]),
        # Its lowest test perplexity (2 s) is not its lowest validation one (4 s): test never picks.
        row("nce", [(1.0, 400.0), (2.0, 104.0), (4.0, 120.0)], valid=[410.0, 130.0, 125.0]),
    ]
    lines = {line["budget_seconds"]: line for line in recommend(rows)}
    assert {line["selection"] for line in lines.values()} == {ON_VALIDATION}
    assert (lines[4.0]["best"], lines[4.0]["best_ppl"], lines[4.0]["best_checkpoint"]) == ("hsm", 100.0, 1.0)
    assert rows[2].kept_point(4.0, on_validation=True).test_ppl == 120.0  # not its lower test 104
    assert (lines[4.0]["fastest"], lines[4.0]["fastest_seconds"]) == ("hsm", 1.0)
    # At 2 s nce keeps its 2 s model (104, validation 130 < 410): within 5% of hsm's 100, but later.
    assert (lines[2.0]["best"], lines[2.0]["best_checkpoint"], lines[2.0]["fastest"]) == ("hsm", 1.0, "hsm")
    # At the budget alone, hsm's 200 would lose to full's 110 at 4 s.
    at_budget = recommend([row(r.approach, [(p.train_seconds, p.test_ppl) for p in r.curve]) for r in rows])
    assert at_budget[-1]["selection"] == AT_BUDGET and (at_budget[-1]["best"], at_budget[-1]["best_ppl"]) == (
        "full",
        110.0,
    )


def test_validation_selection_needs_every_row_of_the_corpus_to_have_it():
    """One row measured before validation was recorded: the corpus is judged at the budget, so no
    layer gains from a selection the others could not have."""
    rows = [
        row("full", [(1.0, 300.0), (2.0, 150.0), (4.0, 110.0)]),
        row("hsm", [(1.0, 100.0), (2.0, 140.0), (4.0, 200.0)], valid=[105.0, 150.0, 210.0]),
    ]
    last = recommend(rows)[-1]
    assert (last["selection"], last["best"], last["best_ppl"], last["best_checkpoint"]) == (
        AT_BUDGET,
        "full",
        110.0,
        4.0,
    )


def repeat_of_full(points: list[tuple[float, float]], valid: list[float] | None = None, seed: int = 1) -> QualityRow:
    """``full`` trained again with the run's seed + ``seed``."""
    again = row(f"full (seed {seed})", points, valid=valid)
    again.method, again.repeat = "full", seed
    return again


def test_layers_within_the_seed_to_seed_spread_are_not_ranked():
    rows = [
        row("full", [(1.0, 200.0), (2.0, 110.0), (4.0, 100.0)]),
        repeat_of_full([(1.0, 210.0), (2.0, 111.0), (4.0, 104.0)]),  # spreads 5%, 0.9%, 4%
        row("hsm", [(1.0, 150.0), (2.0, 105.0), (4.0, 103.0)]),
        row("nce", [(1.0, 300.0), (2.0, 120.0), (4.0, 90.0)]),
    ]
    lines = {line["budget_seconds"]: line for line in recommend(rows)}
    assert [line["best"] for line in lines.values()] == ["hsm", "hsm", "nce"]  # the repeat is never ranked
    assert abs(lines[1.0]["seed_spread"] - 0.05) < 1e-12 and abs(lines[4.0]["seed_spread"] - 0.04) < 1e-12
    # 1 s: full (200) is not within 5% of hsm's 150; 2 s: full's 110 is 4.8% above hsm's 105, more than 0.9%.
    assert lines[1.0]["ranked"] and lines[2.0]["ranked"] and lines[1.0]["tied"] == [] == lines[2.0]["tied"]
    # 4 s: nce's 90 leads by 11%, beyond the 4% spread.
    assert lines[4.0]["ranked"] and lines[4.0]["verdict"] is None
    rows[3] = row("nce", [(1.0, 300.0), (2.0, 120.0), (4.0, 99.5)])  # now full's 100 and hsm's 103 are within 4%
    line = recommend(rows)[-1]
    assert not line["ranked"] and line["tied"] == ["full", "hsm"] and line["best"] == "nce"
    assert line["verdict"] == "nce, full, hsm are within the seed-to-seed spread (4.0%) of each other"


def test_without_a_repeated_seed_the_spread_is_unknown_and_the_best_is_named():
    lines = recommend(
        [row("full", [(1.0, 3.0), (2.0, 2.0), (4.0, 1.0)]), row("hsm", [(1.0, 3.0), (2.0, 2.0), (4.0, 1.01)])]
    )
    assert all(line["seed_spread"] is None and line["ranked"] for line in lines)


def test_a_budget_where_most_layers_overfit_is_too_short_to_rank():
    rows = [
        row("full", [(1.0, 120.0), (2.0, 110.0), (4.0, 115.0)], valid=[121.0, 111.0, 116.0]),
        row("hsm", [(1.0, 100.0), (2.0, 90.0), (4.0, 95.0)], valid=[101.0, 91.0, 96.0]),
        row("nce", [(1.0, 130.0), (2.0, 100.0), (4.0, 92.0)], valid=[131.0, 101.0, 93.0]),
    ]
    lines = {line["budget_seconds"]: line for line in recommend(rows)}
    assert lines[2.0]["ranked"] and lines[2.0]["rising"] == 0
    assert not lines[4.0]["ranked"] and (lines[4.0]["rising"], lines[4.0]["layers"]) == (2, 3)
    assert lines[4.0]["verdict"].startswith("validation perplexity rose since the previous checkpoint for 2 of 3")
