"""``build_model`` and the model registry: names, errors, and wiring of the output layer."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError, UnknownNameError
from bigvocab.models import WordModel, build_model, list_models
from bigvocab.registry import MODELS

V = 8
TINY = {
    "nnlm": {"context": 2, "embedding_dim": 3, "hidden_dim": 4},
    "lstm": {"embedding_dim": 3, "hidden_dim": 4, "num_layers": 1, "bptt": 3},
    "skipgram": {"vector_size": 3, "window": 2},
    "cbow": {"vector_size": 3, "window": 2},
    "cw": {"window": 1, "embedding_dim": 3, "hidden_dim": 4},
}
COUNTS = [40, 20, 10, 8, 5, 3, 2, 1]


def test_registered_models():
    assert sorted(list_models()) == ["cbow", "cw", "lstm", "nnlm", "skipgram", "xmc"]
    assert all(issubclass(MODELS.get(name), WordModel) for name in list_models())
    assert [name for name in list_models() if not MODELS.get(name).has_distribution] == ["cw"]


@pytest.mark.parametrize("name", list(TINY))
def test_every_model_builds_and_runs_its_contract(name):
    output = None if name == "cw" else "full"
    model = build_model(name, V, output, counts=COUNTS, words=[f"w{i}" for i in range(V)], model_kwargs=TINY[name])
    assert model.word_vectors().shape[0] == V
    ids = torch.tensor([0, 1, 2, 0, 1, 3, 4, 5, 6, 7, 0, 1])
    for train in (True, False):
        for batch in model.batches(ids, 4, train=train, generator=torch.Generator().manual_seed(0)):
            loss = model.loss(batch)
            assert loss.dim() == 0 and torch.isfinite(loss)
            if model.has_distribution:
                assert model.log_prob(batch).shape == batch["target"].shape
    if output is not None:
        assert model.output.in_features == type(model).output_features(**TINY[name])


def test_counts_reach_the_model_that_reads_them():
    model = build_model("skipgram", V, "full", counts=COUNTS, model_kwargs={"vector_size": 3, "sample": 0.05})
    assert model.keep_prob is not None and model.keep_prob[0] < 1


def test_unknown_model_name_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="unknown model 'nnml'; did you mean 'nnlm'"):
        build_model("nnml", V, "full")


def test_unknown_output_name_is_an_unknown_name_error():
    with pytest.raises(UnknownNameError, match="unknown output layer 'ful'"):
        build_model("nnlm", V, "ful")


def test_missing_output_is_a_config_error():
    with pytest.raises(ConfigError, match="'nnlm' needs an output layer"):
        build_model("nnlm", V, None)


def test_unknown_model_option_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown lstm option 'hiden_dim'; did you mean 'hidden_dim'"):
        build_model("lstm", V, "full", model_kwargs={"hiden_dim": 4})


def test_output_options_are_passed_and_checked():
    model = build_model("nnlm", V, "full", model_kwargs=TINY["nnlm"], output_kwargs={"bias": False})
    assert model.output.bias is None
    with pytest.raises(ConfigError, match="does not take 'biass'"):
        build_model("nnlm", V, "full", model_kwargs=TINY["nnlm"], output_kwargs={"biass": False})


def test_output_must_be_an_output_layer():
    with pytest.raises(ConfigError, match="must be an OutputLayer"):
        MODELS.get("nnlm")(V, torch.nn.Linear(3, V), **TINY["nnlm"])


def test_vocab_size_is_checked():
    with pytest.raises(ConfigError, match="vocab_size must be at least 2"):
        build_model("cw", 1, None)
    with pytest.raises(ConfigError, match="vocab_size must be a positive integer"):
        build_model("cw", -4, None)
    assert isinstance(bigvocab.ConfigError("x"), ValueError)


@pytest.mark.parametrize("name", list(TINY))
def test_state_dict_round_trip_reproduces_the_model(name):
    output = None if name == "cw" else "full"

    def build(seed):
        torch.manual_seed(seed)
        return build_model(name, V, output, counts=COUNTS, model_kwargs=TINY[name])

    original, copy = build(0), build(1)
    assert not torch.equal(original.word_vectors(), copy.word_vectors())
    copy.load_state_dict(original.state_dict())
    assert "keep_prob" not in original.state_dict()
    ids = torch.tensor([0, 1, 2, 0, 1, 3, 4, 5, 6, 7, 0, 1])
    for a, b in zip(original.batches(ids, 4, train=False), copy.batches(ids, 4, train=False)):
        torch.testing.assert_close(original.loss(a), copy.loss(b), rtol=0, atol=0)
    assert torch.equal(original.word_vectors(), copy.word_vectors())
