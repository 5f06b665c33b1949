"""``bench --retrieval`` on a tiny planted task: its rows, curves, report and row selection."""

from __future__ import annotations

import argparse

import pytest
import torch

from bigvocab.bench import add_bench_arguments
from bigvocab.bench.suites import retrieval
from bigvocab.bench.suites.retrieval import (
    METRICS,
    P1_ROWS,
    PECOS,
    PECOS_MISSING,
    RetrievalConfig,
    config_from_args,
    paired_ratio_interval,
    report_markdown,
    retrieval_candidates,
    run_retrieval,
)
from bigvocab.errors import ConfigError
from bigvocab.outputs.factory import reference_output, retrieval_forms


def test_rows_are_the_declared_retrieval_forms_reference_first():
    labels = [candidate.label for candidate in retrieval_candidates(None)]
    assert labels[0] == reference_output()
    assert sorted(labels) == sorted(label for label, _, _ in retrieval_forms())
    assert len(labels) >= 10


def tiny(**options) -> RetrievalConfig:
    """A planted task small enough to train every row in a second."""
    defaults = dict(item_counts=[300], group_size=10, train_rows=400, test_rows=50, hidden=8, steps=4)
    return RetrievalConfig(**{**defaults, "checkpoints": (0.1, 0.25, 0.5, 1.0), **options})


def test_tiny_run_reports_every_metric_at_every_checkpoint():
    rows = [reference_output(), "sampled[in_batch]"]
    results = run_retrieval(tiny(rows=rows))
    assert [row["approach"] for row in results["rows"] if row["method"] != "pecos"] == rows
    for row in results["rows"]:
        assert row["status"] == "ok", row["error"]
        assert set(METRICS) <= set(row["metrics"])
        assert all(0 <= row["metrics"][name] <= 1 for name in ("P@1", "P@5", "recall@10"))
    first = results["rows"][0]
    # 0.1 and 0.25 of 4 steps are both step 1, evaluated once
    assert [point["steps"] for point in first["curve"]] == [1, 2, 4] and first["steps"] == 4
    assert 0 < results["tasks"]["300"]["bayes"]["P@1"] <= 1
    report = report_markdown(results, "bigvocab bench --retrieval")
    assert "| sampled[in_batch] |" in report and "1.000 ± 0.000 (at 4)" in report
    ratio = results["rows"][1]["curve"][-1]["P@1"] / first["curve"][-1]["P@1"]
    assert "P@1 at each checkpoint" in report and f"({ratio:.3f} ± " in report
    # each checkpoint keeps every held-out row's P@1, in order, for the paired interval
    assert all(len(point[P1_ROWS]) == 50 for point in first["curve"])
    assert first["curve"][-1]["P@1"] == pytest.approx(first["curve"][-1][P1_ROWS].count("1") / 50)
    assert P1_ROWS not in first["metrics"]


def test_the_ratio_interval_covers_the_spread_of_the_ratio():
    """The delta-method half-width over 1.96 against the standard deviation of P@1 / P@1 over
    R = 2,000 draws of n = 1,000 paired rows from a known joint law of the two rows' hits. The
    sample standard deviation of R draws is within 4 / sqrt(2R) = 6.3% of the true one; the delta
    method's own error at n = 1,000 is below 1%, so 8% is allowed."""
    generator = torch.Generator().manual_seed(0)
    joint = torch.tensor([0.55, 0.08, 0.17, 0.20], dtype=torch.float64)  # (a, b) = 11, 10, 01, 00
    n, draws = 1000, 2000
    ratios, half_widths = [], []
    for _ in range(draws):
        cell = torch.multinomial(joint, n, replacement=True, generator=generator)
        a, b = (cell <= 1), (cell % 2 == 0) & (cell <= 2)
        ratios.append(float(a.double().mean() / b.double().mean()))
        as_rows = ["".join("1" if hit else "0" for hit in hits.tolist()) for hits in (a, b)]
        half_widths.append(paired_ratio_interval(*as_rows))
    spread = torch.tensor(ratios, dtype=torch.float64).std()
    assert float(torch.tensor(half_widths).mean()) / 1.96 == pytest.approx(float(spread), rel=0.08)
    assert paired_ratio_interval("1101", "110") is None and paired_ratio_interval("11", "00") is None


def test_the_reference_row_has_its_own_budget():
    """Every other row stops at its first checkpoint past budget_seconds (0 here); the reference
    trains on to its own budget, so the rows are compared with it at every checkpoint."""
    results = run_retrieval(
        tiny(rows=[reference_output(), "sampled[in_batch]"], budget_seconds=0.0, reference_budget_seconds=1e9)
    )
    reference, other = results["rows"]
    assert [point["steps"] for point in reference["curve"]] == [1, 2, 4] and not reference["error"]
    assert [point["steps"] for point in other["curve"]] == [1] and "past the 0 s budget" in other["error"]


def test_an_absent_pecos_is_stated(monkeypatch):
    monkeypatch.setattr(retrieval, "pecos_installed", lambda: False)
    results = run_retrieval(tiny(rows=[reference_output(), PECOS]))
    assert [row["approach"] for row in results["rows"]] == [reference_output()]
    assert results["notes"] == [PECOS_MISSING] and "numpy < 2" in PECOS_MISSING
    assert f"Note: {PECOS_MISSING}" in report_markdown(results, "bigvocab bench --retrieval")


def test_pecos_row_trains_its_tree_and_ranks_the_held_out_rows():
    """PECOS's tree (PIFA + hierarchical k-means) and rankers on the tiny task: every row ranks
    valid labels, and P@1 is near the task's optimum (the rows are easy to tell apart)."""
    pytest.importorskip("pecos.xmc.xlinear.model")
    results = run_retrieval(tiny(rows=[PECOS], item_counts=[2000], group_size=100, train_rows=4000, test_rows=200))
    (row,) = results["rows"]
    assert row["status"] == "ok", row["error"]
    assert row["options"]["tree"] == "hierarchicalkmeans" and row["train_seconds"] > 0
    assert row["metrics"]["P@1"] >= 0.8 * results["tasks"]["2000"]["bayes"]["P@1"]


@pytest.mark.slow
def test_rows_trained_in_processes_equal_those_trained_in_turn():
    """``jobs`` = 2 trains each row in a worker process from the same seeds: the same curves."""
    rows = [reference_output(), "sampled[in_batch]", "sampled[mixed]"]
    alone, parallel = (run_retrieval(tiny(rows=rows, jobs=jobs)) for jobs in (1, 2))
    assert [row["approach"] for row in parallel["rows"]] == rows
    for one, other in zip(alone["rows"], parallel["rows"]):
        assert [point["P@1"] for point in one["curve"]] == [point["P@1"] for point in other["curve"]]


def test_patterns_that_match_no_row_are_refused():
    with pytest.raises(ConfigError, match="matches no retrieval row"):
        run_retrieval(RetrievalConfig(item_counts=[300], rows=["nothing*"]))


def test_the_retrieval_flags_reach_its_config():
    parser = argparse.ArgumentParser()
    add_bench_arguments(parser)
    flags = "--vocab-sizes 1M --outputs full,sampled* --reference-budget 1700 --jobs 2 --threads 3 --batch 512"
    config = config_from_args(parser.parse_args(flags.split()))
    assert (config.item_counts, config.rows) == ([1_000_000], ["full", "sampled*"])
    assert (config.reference_budget_seconds, config.jobs, config.threads, config.batch_size) == (1700, 2, 3, 512)
    default = config_from_args(parser.parse_args([]))
    assert default.threads == 1
    # another batch keeps the examples seen: twice the steps of half the batch
    assert config.steps * config.batch_size == default.steps * default.batch_size and config.steps == 1200
