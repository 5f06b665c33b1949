"""Every model with every registered output layer (registry-driven: a new layer is covered the
moment it is registered): it builds, trains a step, scores exactly, and ``sparse_parameters`` lists
exactly the parameters whose gradients come out sparse."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.models import build_model
from bigvocab.registry import OUTPUTS

V = 12
COUNTS = [100, 60, 40, 30, 20, 15, 10, 8, 6, 4, 2, 1]
WORDS = ["the", "of", "and", "to", "a", "in", "is", "it", "that", "was", "for", "on"]
MODELS = {
    "nnlm": {"context": 2, "embedding_dim": 3, "hidden_dim": 4},
    "lstm": {"embedding_dim": 4, "hidden_dim": 5, "num_layers": 1, "bptt": 3},
    "skipgram": {"vector_size": 3, "window": 2},
    "cbow": {"vector_size": 3, "window": 2},
}


def _output_kwargs(name: str) -> dict:
    options = OUTPUTS.get(name).accepted_options({})
    return {"num_samples": 3} if options is None or "num_samples" in options else {}


def _check_one_step(model):
    ids = torch.randint(0, V, (40,), generator=torch.Generator().manual_seed(0))
    batch = next(model.batches(ids, 8, train=True, generator=torch.Generator().manual_seed(1)))
    loss = model.loss(batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert model.embedding.weight.grad is not None
    sparse = {id(p) for p in model.sparse_parameters()}
    for name, param in model.named_parameters():
        if param.grad is not None:
            assert param.grad.is_sparse == (id(param) in sparse), name
    with torch.no_grad():
        log_prob = model.log_prob(batch)
    assert log_prob.shape == batch["target"].shape and (log_prob <= 0).all()


@pytest.mark.parametrize("output", bigvocab.list_outputs())
@pytest.mark.parametrize("name", list(MODELS))
def test_model_trains_and_scores_with_output(name, output):
    model = build_model(
        name, V, output, counts=COUNTS, words=WORDS, model_kwargs=MODELS[name], output_kwargs=_output_kwargs(output)
    )
    _check_one_step(model)


def _tied_lstm(output: str, sparse: bool):
    options = {**MODELS["lstm"], "tie_weights": True, "sparse": sparse}
    return build_model(
        "lstm", V, output, counts=COUNTS, words=WORDS, model_kwargs=options, output_kwargs=_output_kwargs(output)
    )


@pytest.mark.parametrize("output", bigvocab.list_outputs())
def test_lstm_ties_when_the_layer_can(output):
    layer = bigvocab.create_output(output, MODELS["lstm"]["embedding_dim"], V, counts=COUNTS, words=WORDS)
    sparse = bool(layer.sparse_grad)
    if not callable(getattr(layer, "tie_weights", None)):
        with pytest.raises(ConfigError, match=f"{type(layer).__name__} cannot share its weight"):
            _tied_lstm(output, sparse)
        return
    model = _tied_lstm(output, sparse)
    assert model.output.weight is model.embedding.weight
    _check_one_step(model)
    with pytest.raises(ConfigError, match=f"set sparse={sparse}"):
        _tied_lstm(output, not sparse)
