"""``bigvocab bench --ann`` end to end at a toy size, and its recall measure."""

from __future__ import annotations

import argparse
import importlib.util
import json

import pytest
import torch

import bigvocab
from bigvocab.bench.suites import ann
from bigvocab.checkpoint import load_model
from bigvocab.cli import main as cli_main


def test_recall_counts_shared_ids_per_query():
    exact = torch.tensor([[1, 2, 3], [4, 5, 6]])
    found = torch.tensor([[3, 9, 1], [7, 8, 9]])
    assert ann.recall(found, exact) == 2 / 6


def test_the_ann_bench_writes_a_row_per_sweep_point(tmp_path, monkeypatch):
    monkeypatch.setattr(
        ann,
        "SWEEPS",
        {
            "lsh": [({"bits": 6, "tables": 4}, [{"probes": 0}, {"probes": 2}])],
            "ivf": [({"nlist": 8}, [{"nprobe": 8, "candidates": 10}])],
            "screening": [({"clusters": 4}, [{"budget": 50}])],
        },
    )
    args = argparse.Namespace(out=tmp_path, vocab_sizes="3000", hidden=16, batch=8, repeats=1, seed=0, outputs=None)
    assert ann.main(args) == 0
    report = (tmp_path / "report.md").read_text()
    assert report.count("| lsh |") == 2 and report.count("| ivf |") == 1 and report.count("| screening |") == 1
    assert "with exact log-probabilities (`normalise=True`" in report
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(0 <= row["p_at_1"] <= 1 and row["speedup_log_softmax"] > 0 for row in rows)
    # nprobe = nlist scans every row: the index path is then exact.
    assert rows[2]["recall"] == 1.0 and rows[2]["p_at_1"] == 1.0
    assert rows[3]["build"]["contexts"] == ann.AnnConfig().contexts  # built from training hidden states
    plotted = importlib.util.find_spec("matplotlib") is not None  # the plot extra
    assert (tmp_path / "recall_vs_speedup.png").is_file() == plotted


def test_fitted_weights_are_a_full_layer_fitted_to_its_queries():
    config = ann.AnnConfig(vocab_size=500, hidden=8, queries=16, weights="fitted")
    inputs = ann.ann_inputs(config)
    assert inputs.queries.shape == (16, 8) and inputs.layer.num_classes == 500
    assert "fitted" in inputs.recipe
    # Fitting moved the weights away from the freshly initialised layer's.
    torch.manual_seed(config.seed)
    fresh = bigvocab.create_output("full", 8, 500)
    assert not torch.equal(fresh.weight, inputs.layer.weight)


def test_a_checkpoint_gives_its_output_layer_and_test_hidden_states(tmp_path):
    run = tmp_path / "run"
    torch.set_num_threads(1)
    assert (
        cli_main(
            [
                "train",
                "--model",
                "nnlm",
                "--output",
                "full",
                "--context",
                "2",
                "--embedding-dim",
                "8",
                "--hidden-dim",
                "8",
                "--batch-size",
                "64",
                "--no-progress",
                "--epochs",
                "1",
                "--corpus",
                "synthetic:vocab_size=300,num_classes=5,tokens=4000",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    config = ann.AnnConfig(queries=32, weights=str(run / "best.pt"))
    inputs = ann.ann_inputs(config)
    model, _, _ = load_model(run / "best.pt")
    assert torch.equal(inputs.layer.weight, model.output.weight)
    features = model.output.in_features
    assert inputs.queries.shape == (32, features) and (config.vocab_size, config.hidden) == (300, features)


def test_a_missing_checkpoint_is_a_config_error(tmp_path):
    with pytest.raises(bigvocab.ConfigError, match="clustered, fitted or a checkpoint"):
        ann.ann_inputs(ann.AnnConfig(weights=str(tmp_path / "nope.pt")))
