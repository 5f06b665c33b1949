"""Shared pieces of the model tests: a custom output layer that is not a linear softmax, a tiny
repetitive stream, and a few SGD steps measured on the exact held-out objective."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from bigvocab.outputs.base import OutputLayer


class TwoLayerSoftmax(OutputLayer):
    """A softmax over a tanh layer: no ``weight`` attribute and no ``tie_weights``, so a model
    that only uses the OutputLayer interface must work with it unchanged."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__(in_features, num_classes)
        self.inner = nn.Linear(in_features, 7)
        self.outer = nn.Linear(7, num_classes)

    def _log_softmax(self, hidden):
        return torch.log_softmax(self.outer(torch.tanh(self.inner(hidden))), dim=1)


@pytest.fixture
def two_layer_softmax():
    return TwoLayerSoftmax


@pytest.fixture
def repetitive_stream():
    """Ten repetitions of the cycle 0 1 2 3 4 5 (V = 6): perfectly predictable from one word."""
    return torch.arange(6).repeat(10)


def held_out_objective(model, ids) -> float:
    """Mean over every target of -log p (models with a distribution) or of the ranking loss,
    from ``batches(train=False)``."""
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in model.batches(ids, 16, train=False):
            n = batch["target"].numel()
            if model.has_distribution:
                total += float(-model.log_prob(batch).sum())
            else:
                total += float(model.loss(batch)) * n
            count += n
    return total / count


@pytest.fixture
def train_a_little():
    """Run ``epochs`` passes of plain SGD (sparse-gradient capable) and return the held-out
    objective before and after."""

    def run(model, ids, *, epochs: int = 30, lr: float = 0.5, batch_size: int = 8) -> tuple[float, float]:
        before = held_out_objective(model, ids)
        optimiser = torch.optim.SGD(model.parameters(), lr=lr)
        generator = torch.Generator().manual_seed(0)
        model.train()
        for _ in range(epochs):
            for batch in model.batches(ids, batch_size, train=True, generator=generator):
                optimiser.zero_grad()
                model.loss(batch).backward()
                optimiser.step()
        model.eval()
        return before, held_out_objective(model, ids)

    return run
