"""``bigvocab train --model skipgram|cbow`` runs on the engine where it applies: checkpoints,
resume, eval and export keep working, and --workers is refused where the engine cannot run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from bigvocab.checkpoint import load_model
from bigvocab.cli import main
from bigvocab.evaluate import load_word2vec_format

SPEC = "synthetic:vocab_size=200,num_classes=5,tokens=20000"


def _run(capsys, argv) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("model,output", [("skipgram", "neg"), ("cbow", "hsm")])
def test_engine_run_checkpoints_resumes_and_exports(capsys, tmp_path, model, output):
    out = tmp_path / "run"
    base = [
        "train",
        "--model",
        model,
        "--output",
        output,
        "--vector-size",
        "8",
        "--corpus",
        SPEC,
        "--no-progress",
        "--out",
        str(out),
    ]
    code, err = _run(capsys, base + ["--epochs", "1", "--workers", "2"])
    assert code == 0, err
    first, _, _ = load_model(out / "last.pt")
    code, err = _run(capsys, ["train", "--resume", "--out", str(out), "--epochs", "2", "--no-progress"])
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_completed"] == 2 and summary["steps"] == 2
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in events if e["event"] == "epoch"] == [1, 2]
    assert all(np.isfinite(e["loss"]) and e["loss"] > 0 for e in events if e["event"] == "epoch")
    second, _, _ = load_model(out / "last.pt")
    assert not torch.equal(first.embedding.weight, second.embedding.weight)
    code, err = _run(capsys, ["export", "--checkpoint", str(out / "last.pt"), "--out", str(tmp_path / "v.txt")])
    assert code == 0, err
    np.testing.assert_array_equal(
        load_word2vec_format(tmp_path / "v.txt").vectors.numpy(), second.embedding.weight.detach().numpy()
    )


def test_workers_is_refused_where_the_engine_does_not_apply(capsys, tmp_path):
    code, err = _run(
        capsys,
        [
            "train",
            "--model",
            "cbow",
            "--output",
            "nce",
            "--corpus",
            SPEC,
            "--workers",
            "2",
            "--no-progress",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert code == 2 and err.count("\n") == 1 and "--workers" in err and "hsm and neg layers, not 'nce'" in err, err


def test_new_run_routes_word2vec_to_the_engine(tmp_path):
    """The routing is the library's: new_run picks the engine's trainer where it applies."""
    from bigvocab.errors import ConfigError
    from bigvocab.runs import new_run
    from bigvocab.train import TrainConfig, Trainer
    from bigvocab.word2vec.trainer import EngineTrainer

    config = TrainConfig(epochs=1, lr=0.025, lr_schedule="linear", min_lr=1e-4, progress=False)
    options = dict(corpus=SPEC, model_kwargs={"vector_size": 8}, validate=False)
    trainer, _ = new_run("skipgram", "neg", config, tmp_path / "a", workers=2, **options)
    assert isinstance(trainer, EngineTrainer) and trainer.workers == 2
    trainer, _ = new_run("skipgram", "nce", config, tmp_path / "b", **options)
    assert type(trainer) is Trainer
    with pytest.raises(ConfigError, match="^workers sets the threads"):
        new_run("skipgram", "nce", config, tmp_path / "c", workers=2, **options)


def test_word_vector_models_skip_the_perplexity_by_default_and_say_so(capsys, tmp_path):
    argv = ["train", "--model", "skipgram", "--vector-size", "8", "--corpus", SPEC, "--epochs", "1", "--no-progress"]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 0
    assert "no perplexity (skipgram trains word vectors; --no-skip-perplexity computes it)" in capsys.readouterr().out
    assert main(argv + ["--out", str(tmp_path / "b"), "--no-skip-perplexity"]) == 0
    assert "test ppl" in capsys.readouterr().out
