"""The trainer's fused row updates (``TrainConfig.fused_rows``, on by default): which runs take
them, that a run with them follows the unfused run, and that a run killed mid-epoch resumes to
the uninterrupted run's losses and weights."""

from __future__ import annotations

import json
import os
import signal
import warnings

import pytest
import torch

from bigvocab.data.corpora import load_corpus
from bigvocab.errors import TrainingInterrupted
from bigvocab.models import build_model
from bigvocab.train import TrainConfig, Trainer, build_optimizers

SPEC = "synthetic:vocab_size=100,num_classes=5,tokens=2000"
QUIET = dict(batch_size=64, progress=False, log_every=1)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(SPEC, progress=False)


def make(corpus, model: str = "nnlm", output: str = "neg", **model_kwargs):
    torch.manual_seed(0)
    small = {"nnlm": {"context": 2, "embedding_dim": 8, "hidden_dim": 8}, "lstm": {"embedding_dim": 8, "hidden_dim": 8}}
    return build_model(
        model,
        len(corpus.vocab),
        output,
        counts=corpus.vocab.counts,
        model_kwargs={**small.get(model, {"vector_size": 8, "window": 2}), **model_kwargs},
        output_kwargs={"num_samples": 5},
    )


def kinds(model, **options) -> list[str]:
    return [type(o).__name__ for o in build_optimizers(model, TrainConfig(progress=False, **options))[0]]


def test_sparse_output_rows_are_fused_by_default(corpus):
    assert kinds(make(corpus), optimizer="sgd") == ["SGD", "SGD", "FusedSGD"]  # dense, embedding, output rows
    assert kinds(make(corpus), optimizer="adagrad")[-1] == "FusedAdagrad"
    assert kinds(make(corpus), optimizer="adam")[-1] == "FusedSparseAdam"
    assert kinds(make(corpus, "skipgram"), optimizer="sparse_adam") == ["SparseAdam", "FusedSparseAdam"]


@pytest.mark.parametrize(
    "options",
    [{"optimizer": "sgd", "fused_rows": False}, {"optimizer": "momentum"}, {"optimizer": "adam", "amsgrad": True}],
)
def test_runs_where_fusion_does_not_apply_step_with_torch_optim(corpus, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # momentum and amsgrad densify the sparse gradients, and say so
        assert not any(name.startswith("Fused") for name in kinds(make(corpus), **options))


def test_weight_decay_and_tied_weights_are_not_fused(corpus):
    with pytest.warns(UserWarning, match="weight decay"):
        assert "FusedSGD" not in kinds(make(corpus), optimizer="sgd", weight_decay=1e-4)
    tied = make(corpus, "lstm", tie_weights=True, sparse=True)
    assert "FusedSGD" not in kinds(tied, optimizer="sgd")


def test_a_fused_run_follows_the_unfused_run(corpus):
    """float32, SGD: the same rows, the same update, one epoch."""
    config = dict(**QUIET, epochs=1, optimizer="sgd", lr=0.2, lr_schedule="linear")
    fused, unfused = make(corpus), make(corpus)
    Trainer(fused, corpus.train, corpus.valid, TrainConfig(**config)).fit()
    Trainer(unfused, corpus.train, corpus.valid, TrainConfig(**config, fused_rows=False)).fit()
    for key, value in unfused.state_dict().items():
        torch.testing.assert_close(fused.state_dict()[key], value, rtol=1e-5, atol=1e-6, msg=key)


@pytest.fixture
def default_sigint():
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.usefixtures("default_sigint")
def test_a_run_killed_mid_epoch_resumes_to_the_straight_runs_losses(corpus, tmp_path):
    """SIGTERM in the middle of step 5's loss; adagrad state and clipping included."""
    config = TrainConfig(**QUIET, epochs=2, optimizer="adagrad", lr=0.1, clip_norm=0.5, lr_schedule="exponential")
    straight = make(corpus, "skipgram")
    Trainer(straight, corpus.train, corpus.valid, config, out_dir=tmp_path / "a").fit()
    killed = make(corpus, "skipgram")
    original_loss = killed.loss

    def loss_that_is_killed(batch):
        killed.calls_seen = getattr(killed, "calls_seen", 0) + 1
        if killed.calls_seen == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        return original_loss(batch)

    killed.loss = loss_that_is_killed
    with pytest.raises(TrainingInterrupted):
        Trainer(killed, corpus.train, corpus.valid, config, out_dir=tmp_path / "b").fit()
    resumed = make(corpus, "skipgram")
    trainer = Trainer.resume(tmp_path / "b", resumed, corpus.train, corpus.valid)
    assert type(trainer.optimizers[-1]).__name__ == "FusedAdagrad"
    trainer.fit()
    for key, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[key], value), key
    losses = lambda run: [(e["step"], e["loss"]) for e in map(json.loads, (tmp_path / run / "metrics.jsonl").open())]
    assert losses("b") == losses("a")
