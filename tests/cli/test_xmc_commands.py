"""``bigvocab train --model xmc`` on an Extreme Classification Repository folder and ``bigvocab
eval`` of its checkpoint: both report P@k, nDCG@k and PSP@k, and agree."""

from __future__ import annotations

import json

import pytest
import torch

from bigvocab.cli import main
from bigvocab.data import SyntheticXMC, write_xmc
from bigvocab.data.corpora import load_corpus
from bigvocab.errors import DataError


@pytest.fixture
def xmc_folder(tmp_path):
    task = SyntheticXMC(80, 8, signature=2, signature_features=16, noise=1, num_features=24)
    for name, rows, seed in (("train.txt", 400, 0), ("test.txt", 100, 1)):
        write_xmc(task.sample(rows, torch.Generator().manual_seed(seed))[0], tmp_path / name)
    return tmp_path


def test_xmc_corpus_holds_labelled_rows(xmc_folder):
    corpus = load_corpus(f"xmc:{xmc_folder}")
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (380, 20, 100)
    assert corpus.vocab.words[:3] == ["0", "1", "2"] and sum(corpus.vocab.counts) > 380
    assert corpus.model_options == {"num_features": 24}
    with pytest.raises(DataError, match="labelled rows, not a stream"):
        corpus.stream("train")


def test_train_and_eval_report_the_same_retrieval_metrics(capsys, xmc_folder, tmp_path):
    out = tmp_path / "run"
    argv = ["train", "--model", "xmc", "--output", "sampled", "--candidates", "in_batch", "--frequency", "streaming"]
    argv += ["--corpus", f"xmc:{xmc_folder}", "--embedding-dim", "8", "--batch-size", "32", "--epochs", "2"]
    assert main([*argv, "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    metrics = summary["test_metrics"]
    assert set(metrics) >= {"P@1", "P@5", "nDCG@5", "PSP@5", "MRR"} and 0 <= metrics["P@1"] <= 1
    assert f"P@1 {metrics['P@1']:.4f}" in printed
    assert main(["eval", "--checkpoint", str(summary["checkpoint"]), "--no-progress"]) == 0
    assert f"test P@1 {metrics['P@1']:.4f}" in capsys.readouterr().out
