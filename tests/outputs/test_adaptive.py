"""Adaptive softmax against torch.nn.AdaptiveLogSoftmaxWithLoss given the same weights."""

from __future__ import annotations

import pytest
import torch
from reference_checks import assert_topk_is_exact

import bigvocab
from bigvocab.errors import ConfigError

V, H = 50, 16

CASES = [
    {"cutoffs": [10, 30], "div_value": 4.0, "bias": False},
    {"cutoffs": [10, 30], "div_value": 2.0, "bias": True},
    {"cutoffs": [1, 2, 49], "div_value": 1.5, "bias": True},
    {"cutoffs": [25], "div_value": 1.0, "bias": False},
]


def _pair(options: dict):
    """Our layer and PyTorch's module with our weights copied into it, in float64."""
    torch.manual_seed(0)
    ours = bigvocab.create_output("adaptive", H, V, **options).double()
    with torch.no_grad():
        for param in ours.parameters():
            param.normal_(0, 0.5)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(
        H, V, options["cutoffs"], div_value=options["div_value"], head_bias=options["bias"]
    ).double()
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


@pytest.mark.parametrize("options", CASES, ids=str)
def test_agrees_with_pytorch(options):
    ours, theirs = _pair(options)
    hidden = torch.randn(40, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (40,), generator=torch.Generator().manual_seed(1))
    result = theirs(hidden, target)
    assert torch.equal(ours.log_softmax(hidden), theirs.log_prob(hidden))
    torch.testing.assert_close(ours.log_prob(hidden, target), result.output, atol=1e-13, rtol=0)
    torch.testing.assert_close(ours.loss(hidden, target, reduction="none"), -result.output, atol=1e-13, rtol=0)
    torch.testing.assert_close(ours.loss(hidden, target), result.loss, atol=1e-13, rtol=0)
    torch.testing.assert_close(ours.loss(hidden, target, reduction="sum"), -result.output.sum(), atol=1e-12, rtol=0)
    assert torch.equal(ours.topk(hidden, 1)[1].squeeze(1), theirs.predict(hidden))
    # A cluster that no target falls in gets no gradient on either side.
    got = torch.autograd.grad(
        ours.loss(hidden, target), [hidden, *ours.parameters()], allow_unused=True, materialize_grads=True
    )
    want = torch.autograd.grad(result.loss, [hidden, *theirs.parameters()], allow_unused=True, materialize_grads=True)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("chunk", [None, 7])
def test_sequence_input_and_chunked_loss(chunk):
    ours, theirs = _pair(CASES[1])
    ours.max_chunk_elements = chunk
    hidden = torch.randn(3, 5, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (3, 5))
    flat = theirs(hidden.reshape(15, H), target.reshape(15))
    torch.testing.assert_close(ours.log_prob(hidden, target), flat.output.reshape(3, 5), atol=1e-13, rtol=0)
    loss = ours.loss(hidden, target)
    torch.testing.assert_close(loss, flat.loss, atol=1e-13, rtol=0)
    for g, w in zip(
        torch.autograd.grad(loss, [hidden, ours.head.weight]),
        torch.autograd.grad(flat.loss, [hidden, theirs.head.weight]),
    ):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("options", CASES, ids=str)
@pytest.mark.parametrize("k", [1, 5, 12, 31, V])
def test_topk_is_exact(options, k):
    ours, _ = _pair(options)
    hidden = torch.randn(8, H, dtype=torch.float64) * 2
    assert_topk_is_exact(ours, hidden, k)


def test_topk_scores_only_clusters_that_can_matter():
    """A cluster whose token is less likely than the k-th shortlist word is never projected."""
    ours, _ = _pair(CASES[0])
    with torch.no_grad():
        ours.head.weight[10:] = 0
        ours.head.weight[:10] = 0
        ours.head.weight[:10, 0] = 5.0  # shortlist words get logit 5 h_0, cluster tokens 0
    calls = []
    for tail in ours.tail:
        tail[0].register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    hidden = torch.zeros(4, H, dtype=torch.float64)
    hidden[:, 0] = 3.0
    values, ids = ours.topk(hidden, 3)
    assert calls == [] and (ids < 10).all()
    torch.testing.assert_close(values, ours.log_softmax(hidden).topk(3, dim=1).values)


def test_default_cutoffs_and_projection_sizes():
    counts = (1000 / torch.arange(1, V + 1)).tolist()
    layer = bigvocab.create_output("adaptive", H, V, counts=counts)
    assert layer.cutoffs and all(0 < c < V for c in layer.cutoffs)
    tiny = bigvocab.create_output("adaptive", 3, V, cutoffs=[10, 20], div_value=4.0)
    assert [tail[0].out_features for tail in tiny.tail] == [1, 1]


@pytest.mark.parametrize(
    "options, match",
    [
        ({"cutoffs": []}, "at least one cutoff"),
        ({"cutoffs": [30, 10]}, "strictly increasing"),
        ({"cutoffs": [10, 50]}, r"\[1, 49\]"),
        ({"cutoffs": [10], "div_value": 0}, "div_value"),
    ],
)
def test_bad_options_are_named(options, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_output("adaptive", H, V, **options)
