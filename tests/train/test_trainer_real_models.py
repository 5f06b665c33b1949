"""Exact resume with the library's own models, whose sampled output layers draw from the global
RNG and may carry state that every step updates (Yi et al.'s streaming frequency estimate of the
in-batch candidates): the checkpoint's RNG states and the layer's buffers must put every draw and
every estimate back where they were, so that the losses and the weights are the straight run's."""

from __future__ import annotations

import json

import pytest
import torch

from bigvocab.data import SyntheticXMC
from bigvocab.data.corpora import load_corpus
from bigvocab.models import build_model
from bigvocab.train import TrainConfig, Trainer

SPEC = "synthetic:vocab_size=100,num_classes=5,tokens=2000"
CASES = [
    ("nnlm", "sampled", {"num_samples": 10}, {"context": 2, "embedding_dim": 8, "hidden_dim": 8}),
    ("skipgram", "neg", {"num_samples": 5}, {"vector_size": 8, "window": 2}),
    ("nnlm", "sampled", {"candidates": "in_batch", "frequency": "streaming"}, {"context": 2, "embedding_dim": 8}),
    ("nnlm", "sampled", {"candidates": "mixed", "num_samples": 10, "frequency": "streaming"}, {"context": 2}),
    ("xmc", "sampled", {"candidates": "in_batch", "frequency": "streaming"}, {"num_features": 40, "embedding_dim": 8}),
]
#: The labelled rows ``xmc`` trains on: a planted multi-label task.
XMC_TASK = SyntheticXMC(100, 10, signature=2, signature_features=20, num_features=40)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(SPEC, progress=False)


def data_of(name: str, corpus) -> tuple:
    """(train, valid, V, counts) of the model ``name``: labelled rows for ``xmc``, the stream otherwise."""
    if name == "xmc":
        train, valid = (XMC_TASK.sample(rows, torch.Generator().manual_seed(rows))[0] for rows in (600, 100))
        return train, valid, train.num_labels, train.label_counts().tolist()
    return corpus.train, corpus.valid, len(corpus.vocab), corpus.vocab.counts


@pytest.mark.parametrize("name, output, output_kwargs, model_kwargs", CASES)
def test_stop_mid_epoch_and_resume_equals_straight_run(corpus, tmp_path, name, output, output_kwargs, model_kwargs):
    train, valid, vocab_size, counts = data_of(name, corpus)

    def build():
        torch.manual_seed(0)
        return build_model(
            name,
            vocab_size,
            output,
            counts=counts,
            model_kwargs=model_kwargs,
            output_kwargs=output_kwargs,
        )

    config = dict(epochs=2, batch_size=64, progress=False, optimizer="adam", lr=0.01, log_every=1)
    straight = build()
    steps = Trainer(straight, train, valid, TrainConfig(**config), out_dir=tmp_path / "a").fit()["steps"]
    stop = steps // 2 + 1  # inside the second epoch
    Trainer(build(), train, valid, TrainConfig(**config, max_steps=stop), out_dir=tmp_path / "b").fit()
    resumed = build()
    Trainer.resume(tmp_path / "b", resumed, train, valid, max_steps=None).fit()
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key

    def step_losses(run: str) -> list[tuple[int, float]]:
        events = map(json.loads, (tmp_path / run / "metrics.jsonl").read_text().splitlines())
        return [(event["step"], event["loss"]) for event in events if event["event"] == "step"]

    assert step_losses("b") == step_losses("a")
    if output_kwargs.get("frequency") == "streaming":
        assert int(resumed.output.frequency.step) == steps
