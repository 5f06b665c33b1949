"""Differentiated softmax against the dense block-diagonal softmax it stands for."""

from __future__ import annotations

import pytest
import torch
from reference_checks import assert_matches_reference, assert_topk_is_exact

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.bands import resolve_cutoffs
from bigvocab.outputs.dsoftmax import default_dims

V, H = 40, 9


def _layer(**options) -> bigvocab.OutputLayer:
    torch.manual_seed(0)
    layer = bigvocab.create_output("dsoftmax", H, V, **options).double()
    with torch.no_grad():
        for param in layer.parameters():
            param.normal_(0, 0.7)
    return layer


def _dense_log_softmax(layer, hidden: torch.Tensor) -> torch.Tensor:
    """log_softmax(h W^T + b) with W (V, H) zero outside each band's (rows, section) block."""
    blocks = []
    for b, weight in enumerate(layer.weights):
        block = hidden.new_zeros(weight.shape[0], H)
        block = block.index_put(
            (torch.arange(weight.shape[0])[:, None], torch.arange(layer.sections[b], layer.sections[b + 1])), weight
        )
        blocks.append(block)
    logits = hidden @ torch.cat(blocks).t()
    if layer.biases is not None:
        logits = logits + torch.cat(list(layer.biases))
    return torch.log_softmax(logits, 1)


CASES = [
    {"counts": bigvocab.zipf_counts(V)},
    {"cutoffs": [5, 20], "dims": [5, 3, 1]},
    {"cutoffs": [1], "dims": [2, 7]},
    {"cutoffs": [10, 11, 30], "dims": [3, 3, 2, 1], "bias": False},
    {"cutoffs": []},
]


@pytest.mark.parametrize("options", CASES, ids=str)
def test_matches_the_block_diagonal_softmax(options):
    layer = _layer(**options)
    hidden = torch.randn(6, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 39, 4, 5, 19, 20])
    reference = _dense_log_softmax(layer, hidden)
    log_p = layer.log_softmax(hidden)
    torch.testing.assert_close(log_p, reference, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(log_p.logsumexp(1), torch.zeros(6, dtype=torch.float64), atol=1e-12, rtol=0)
    ours = layer.loss(hidden, target, reduction="sum")
    assert_matches_reference(ours, -reference.gather(1, target[:, None]).sum(), [hidden, *layer.parameters()])


@pytest.mark.parametrize("options", CASES, ids=str)
@pytest.mark.parametrize("k", [1, 4, 12, V])
def test_topk_is_exact(options, k):
    layer = _layer(**options)
    hidden = torch.randn(5, H, dtype=torch.float64)
    assert_topk_is_exact(layer, hidden, k)


def test_small_chunks_give_the_same_results():
    hidden = torch.randn(5, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (5,))
    outputs = []
    for chunk in (None, 7):
        layer = _layer(cutoffs=[5, 20], dims=[5, 3, 1], max_chunk_elements=chunk)
        loss = layer.loss(hidden, target)
        outputs.append((loss, *torch.autograd.grad(loss, [hidden, *layer.parameters()]), *layer.topk(hidden, 6)))
    for a, b in zip(*outputs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def test_default_bands_follow_the_counts():
    counts = (10_000 / torch.arange(1, V + 1)).tolist()
    layer = bigvocab.create_output("dsoftmax", 64, V, counts=counts)
    mass = torch.tensor(counts).cumsum(0) / sum(counts)
    first = layer.cutoffs[0]
    assert mass[first - 1] >= 0.8 > mass[first - 2]
    assert layer.dims == sorted(layer.dims, reverse=True) and sum(layer.dims) == 64
    assert [w.shape[1] for w in layer.weights] == layer.dims
    # Zipf's law over the ids' order, asked for explicitly, gives the same bands for this vocabulary.
    assert bigvocab.create_output("dsoftmax", 64, V, counts=bigvocab.zipf_counts(V)).cutoffs == layer.cutoffs
    # The partition Grave et al. (2017) gave D-softmax beside the adaptive softmax: the same cutoffs.
    assert bigvocab.create_output("adaptive", 64, V, counts=counts).cutoffs == layer.cutoffs


def test_helpers():
    assert default_dims(7, 3) == [4, 2, 1] and sum(default_dims(256, 3)) == 256
    assert resolve_cutoffs([3, 5], 10, owner="x") == [3, 5]
    assert resolve_cutoffs(None, 2, [3, 1], owner="x") == [1]
    with pytest.raises(ConfigError, match=r"x needs counts= .*or give the band edges as cutoffs="):
        resolve_cutoffs(None, 10, owner="x")


@pytest.mark.parametrize(
    "options, match",
    [
        ({"cutoffs": [5, 3]}, "strictly increasing"),
        ({"cutoffs": [0, 3]}, "strictly increasing"),
        ({"cutoffs": [3, 40]}, r"\[1, 39\]"),
        ({"cutoffs": [2.5]}, "integers"),
        ({"cutoffs": "ab"}, "integers"),
        ({"cutoffs": [5], "dims": [5, 5]}, "sum to 10, but in_features=9"),
        ({"cutoffs": [5], "dims": [9]}, "each of the 2 bands"),
        ({"cutoffs": [5], "dims": [9, 0]}, "positive size"),
        ({"cutoffs": list(range(1, 11))}, "cannot be split into 11"),
        ({"counts": [1, 2]}, "counts has 2 entries"),
        ({}, "needs counts="),
    ],
)
def test_bad_options_are_named(options, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_output("dsoftmax", H, V, **options)
