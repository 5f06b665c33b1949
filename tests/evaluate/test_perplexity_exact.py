"""Exact perplexity against a brute-force sum over a model with a known probability table."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from bigvocab.errors import DataError, NonFiniteError
from bigvocab.evaluate.perplexity import perplexity, total_log_prob


class TableBigram(nn.Module):
    """p(w_t | w_{t-1}) = softmax(logits[w_{t-1}]); batches predict ids[1:] in order."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = nn.Parameter(logits.clone())
        self.modes: list[bool] = []

    def num_batches(self, ids, batch_size):
        return -(-(ids.numel() - 1) // batch_size)

    def batches(self, ids, batch_size, *, train, generator=None):
        for start in range(1, ids.numel(), batch_size):
            stop = min(start + batch_size, ids.numel())
            yield {"context": ids[start - 1 : stop - 1], "target": ids[start:stop]}

    def log_prob(self, batch):
        self.modes.append(self.training)
        assert not torch.is_grad_enabled()
        rows = torch.log_softmax(self.logits[batch["context"]], dim=1)
        return rows.gather(1, batch["target"][:, None]).squeeze(1)


@pytest.fixture
def model_and_ids():
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(7, 7, generator=generator) * 2
    ids = torch.randint(0, 7, (101,), generator=generator)
    return TableBigram(logits), ids


def brute_force(logits: torch.Tensor, ids: torch.Tensor) -> float:
    total = 0.0
    for prev, word in zip(ids[:-1].tolist(), ids[1:].tolist()):
        row = logits[prev].double()
        total += float(row[word] - torch.logsumexp(row, 0))
    return math.exp(-total / (ids.numel() - 1))


@pytest.mark.parametrize("batch_size", [1, 7, 100, 5000])
def test_perplexity_equals_brute_force_for_any_batch_size(model_and_ids, batch_size):
    model, ids = model_and_ids
    expected = brute_force(model.logits.detach(), ids)
    assert perplexity(model, ids, batch_size) == pytest.approx(expected, rel=1e-6)


def test_counts_every_target_once_and_restores_training_mode(model_and_ids):
    model, ids = model_and_ids
    model.train()
    _, count = total_log_prob(model, ids, 13, progress=True)
    assert count == ids.numel() - 1
    assert model.modes and not any(model.modes)
    assert model.training


def test_uniform_model_has_perplexity_v():
    model = TableBigram(torch.zeros(5, 5))
    # log(1/5) in float32 is off by at most half an ulp (~6e-8 relative), so ppl by ~1e-7
    assert perplexity(model, torch.randint(0, 5, (50,))) == pytest.approx(5.0, rel=1e-6)


def test_no_targets_and_bad_ids(model_and_ids):
    model, _ = model_and_ids
    with pytest.raises(DataError, match="no targets"):
        perplexity(model, torch.tensor([2]))
    with pytest.raises(DataError, match="1-D"):
        perplexity(model, torch.zeros(2, 3, dtype=torch.long))


def test_nan_parameters_are_reported(model_and_ids):
    model, _ids = model_and_ids
    with torch.no_grad():
        model.logits[0, 0] = float("nan")
    with pytest.raises(NonFiniteError, match="NaN"):
        perplexity(model, torch.zeros(10, dtype=torch.long))
