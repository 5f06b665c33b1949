"""``bench --retrieval`` on a tiny planted task: its rows, curves, report and row selection."""

from __future__ import annotations

import pytest

from bigvocab.bench.suites.retrieval import (
    METRICS,
    RetrievalConfig,
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


def test_tiny_run_reports_every_metric_at_every_checkpoint():
    rows = [reference_output(), "sampled[in_batch]"]
    config = RetrievalConfig(
        item_counts=[300],
        group_size=10,
        train_rows=400,
        test_rows=50,
        hidden=8,
        steps=4,
        rows=rows,
        checkpoints=(0.1, 0.25, 0.5, 1.0),
    )
    results = run_retrieval(config)
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
    assert "| sampled[in_batch] |" in report and "1.000 (at 4)" in report


def test_patterns_that_match_no_row_are_refused():
    with pytest.raises(ConfigError, match="matches no retrieval row"):
        run_retrieval(RetrievalConfig(item_counts=[300], rows=["nothing*"]))
