"""``bce``: the one-vs-all logistic loss by hand, its start (σ(b) = 1/V), its defaults and its
registration (the loss against brute force for every candidate source is in test_candidates.py,
its exact evaluation in the contract suite)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import bigvocab


def test_registered_and_listed():
    assert "bce" in bigvocab.list_outputs()
    assert bigvocab.create_output("bce", 4, 10).takes_negatives


def test_loss_sums_every_positive_and_every_negative_by_hand():
    """In-batch, rows {0, 2} and {1}: row 0's negative is 1, row 1's are 0 and 2; with zero
    rows the scores are the biases."""
    layer = bigvocab.create_output("bce", 3, 4, candidates="in_batch", dtype=torch.float64)
    bias = torch.tensor([0.3, -1.0, 2.0, 0.5], dtype=torch.float64)
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.copy_(bias)
    loss = layer.loss(torch.zeros(2, 3, dtype=torch.float64), torch.tensor([[0, 2], [1, -1]]), reduction="none")
    expected = torch.stack(
        [
            F.softplus(-bias[0]) + F.softplus(-bias[2]) + F.softplus(bias[1]),
            F.softplus(-bias[1]) + F.softplus(bias[0]) + F.softplus(bias[2]),
        ]
    )
    torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)


def test_each_label_starts_at_probability_one_over_v():
    layer = bigvocab.create_output("bce", 3, 50)
    torch.testing.assert_close(torch.sigmoid(layer.bias), torch.full((50,), 1 / 50))
    assert bigvocab.create_output("bce", 3, 50, bias=False).bias is None
    assert math.isclose(float(layer.bias[0]), -math.log(49), rel_tol=1e-6)


def test_defaults():
    counts = [100.0 / (i + 1) for i in range(50)]
    layer = bigvocab.create_output("bce", 3, 50, counts=counts)
    assert type(layer.sampler).registered_name == "unigram" and layer.num_samples == 49
    assert layer.shared and layer.unique and layer.candidates == "sampler"
    assert type(bigvocab.create_output("bce", 3, 50).sampler).registered_name == "log_uniform"
    assert bigvocab.create_output("bce", 3, 5000).num_samples == 1024
