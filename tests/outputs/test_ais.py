"""Adaptive importance sampling: the estimator against a brute-force formula, the effective
sample size and the extra blocks it triggers, and the previous-token context hook."""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.ais import effective_sample_size

V, H, N = 20, 4, 5


def counts() -> list[float]:
    return [500.0 / (i + 1) for i in range(V)]


def fitted_layer(**options):
    torch.manual_seed(0)
    layer = bigvocab.create_output("ais", H, V, counts=counts(), **options)
    tokens = torch.randint(0, V, (300,), generator=torch.Generator().manual_seed(1))
    tokens[1::2] = (tokens[0::2] + 1) % V
    layer.sampler.fit(tokens)
    with torch.no_grad():
        layer.bias.normal_()
    return layer


def test_effective_sample_size():
    assert float(effective_sample_size(torch.zeros(1, 8))) == pytest.approx(8)
    one_hot = torch.full((1, 8), float("-inf"))
    one_hot[0, 3] = 0.0
    assert float(effective_sample_size(one_hot)) == pytest.approx(1)
    log_w = torch.randn(3, 6, dtype=torch.float64)
    w = log_w.exp()
    torch.testing.assert_close(effective_sample_size(log_w), w.sum(1) ** 2 / (w**2).sum(1))


@pytest.mark.parametrize("with_context, shared", [(True, True), (False, True), (False, False)])
def test_loss_matches_the_importance_sampling_formula(with_context, shared):
    """One block (min_ess tiny): loss_n = log[(1/k) Σ_j exp(s_{y_j}) / Q(y_j | c_n)] - s_{t_n};
    without a context the draws are one set for the batch (``shared``) or one per example."""
    layer = fitted_layer(num_samples=6, min_ess=1e-6, shared=shared).eval()  # eval: Q stays as drawn from
    hidden, target = torch.randn(N, H), torch.tensor([0, 4, 4, 9, 19])
    context = torch.tensor([3, 3, 7, 19, 0])
    torch.manual_seed(3)
    ours = layer.loss(hidden, target, reduction="none", context=context if with_context else None)
    assert layer.last_num_samples == 6
    torch.manual_seed(3)
    if with_context:
        samples = layer.sampler.sample(6, context=context)
    elif shared:
        samples = layer.sampler.sample(6).expand(N, 6)
    else:
        samples = layer.sampler.sample(N * 6).reshape(N, 6)
    log_q = layer.sampler.log_q(samples, context=context if with_context else None).double()
    weight, bias = layer.weight.detach().double(), layer.bias.detach().double()
    for n in range(N):
        ratios = [
            math.exp(float(hidden[n].double() @ weight[y] + bias[y]) - float(log_q[n, j]))
            for j, y in enumerate(samples[n])
        ]
        expected = math.log(sum(ratios) / 6) - float(hidden[n].double() @ weight[target[n]] + bias[target[n]])
        assert float(ours[n].detach()) == pytest.approx(expected, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("shared, seed", [(True, 2), (False, 0)])
def test_more_blocks_only_for_examples_with_low_ess(shared, seed):
    """Row 0 has a nearly flat model (ESS near k, above min_ess) and must use its first block only;
    row 1 puts almost all mass on one class (ESS ~ 1) and keeps drawing until max_samples. Per-example
    blocks after the first are drawn for row 1 alone. (float32 logits: agreement to 1e-5.)"""
    torch.manual_seed(0)
    layer = bigvocab.create_output(
        "ais", H, V, sampler="uniform", num_samples=4, min_ess=2.0, max_samples=12, shared=shared
    )
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.zero_()
        layer.weight[7, 0] = 12.0
    hidden = torch.tensor([[0.0, 0.1, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    target = torch.tensor([1, 7])
    with torch.no_grad():
        layer.bias[:5] = torch.tensor([0.1, -0.2, 0.3, 0.0, 0.2])
    torch.manual_seed(seed)
    ours = layer.loss(hidden, target, reduction="none")
    assert layer.last_num_samples == 12
    assert layer.last_examples_per_block == [2, 1, 1]  # row 0 stopped after its first block
    torch.manual_seed(seed)
    if shared:
        blocks = [layer.sampler.sample(4).expand(2, 4) for _ in range(3)]
    else:
        blocks = [layer.sampler.sample(2 * 4).reshape(2, 4)]
        blocks += [layer.sampler.sample(4).expand(2, 4) for _ in range(2)]  # row 1's draws; row 0 stopped
    # The seed draws class 7 for row 1 exactly once, in its first block: its ESS stays near 1.
    assert [int((b[1] == 7).sum()) for b in blocks] == [1, 0, 0]
    logits = layer.logits(hidden).detach().double()
    first = logits[0, blocks[0][0]] + math.log(V)
    torch.testing.assert_close(
        ours[0].double(), torch.logsumexp(first, 0) - math.log(4) - logits[0, 1], atol=1e-5, rtol=1e-5
    )
    every = logits[1, torch.cat([b[1] for b in blocks])] + math.log(V)
    torch.testing.assert_close(
        ours[1].double(), torch.logsumexp(every, 0) - math.log(12) - logits[1, 7], atol=1e-5, rtol=1e-5
    )


def test_flat_model_and_flat_proposal_need_one_block():
    layer = bigvocab.create_output("ais", H, V, sampler="uniform", num_samples=8, min_ess=8.0)
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.zero_()
    layer.loss(torch.randn(N, H), torch.randint(0, V, (N,)))
    assert layer.last_num_samples == 8 and layer.last_ess == pytest.approx(8)


@pytest.mark.parametrize("union", [True, False], ids=["product-over-distinct-ids", "gathered-rows"])
@pytest.mark.parametrize("shared", [True, False])
def test_gradient_matches_autograd_through_the_formula(shared, union):
    """The step's gradients (to hidden, rows and biases) equal autograd through the estimator
    written on the full score matrix with the same draws, blocks and kept draws included: the
    blocks chosen without autograd and rescored in one call change the computation, not the maths
    (whether the draws are scored by one product over their distinct ids or by gathered rows)."""
    torch.manual_seed(0)
    # A one-logit chunk budget leaves no room for the (N, U) product, so the rows are gathered.
    layer = bigvocab.create_output(
        "ais",
        H,
        V,
        sampler="uniform",
        num_samples=3,
        min_ess=2.0,
        max_samples=9,
        shared=shared,
        max_chunk_elements=None if union else 1,
    ).double()
    with torch.no_grad():
        layer.weight.mul_(4)  # peaked scores: low ESS, so several blocks and masked draws occur
    hidden = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (N,))
    torch.manual_seed(5)
    layer.loss(hidden, target, reduction="sum").backward()
    blocks = layer.last_num_samples // 3
    ours = (hidden.grad.clone(), layer.weight.grad.to_dense(), layer.bias.grad.to_dense())

    hidden.grad = None
    weight = layer.weight.detach().clone().requires_grad_(True)
    bias = layer.bias.detach().clone().requires_grad_(True)
    torch.manual_seed(5)
    logits = hidden @ weight.t() + bias
    log_weights, wanting, kept = [], torch.ones(N, dtype=torch.bool), []
    for _ in range(blocks):
        # Per-example draws after the first block are made for the rows still drawing only.
        if shared:
            ids = layer.sampler.sample(3).expand(N, 3)
        else:
            ids = torch.zeros(N, 3, dtype=torch.long)
            ids[wanting] = layer.sampler.sample(int(wanting.sum()) * 3).reshape(-1, 3)
        block = logits.gather(1, ids) - layer.sampler.log_q(ids).double()
        log_weights.append(block.masked_fill(~wanting[:, None], float("-inf")))
        kept.append(wanting.clone())
        wanting &= effective_sample_size(torch.cat(log_weights, 1)).detach() < 2.0
    assert blocks > 1 and not torch.stack(kept).all()  # several blocks, and some rows stopped early
    used = torch.stack(kept, 1).sum(1) * 3.0
    loss = torch.logsumexp(torch.cat(log_weights, 1), 1) - used.log() - logits.gather(1, target[:, None]).squeeze(1)
    loss.sum().backward()
    for got, expected in zip(ours, (hidden.grad, weight.grad, bias.grad)):
        torch.testing.assert_close(got, expected)


def test_context_is_passed_to_the_objective_and_checked():
    layer = fitted_layer(num_samples=4)
    hidden, target = torch.randn(N, H), torch.randint(0, V, (N,))
    seen = []
    proposal = layer.sampler.log_q
    layer.sampler.log_q = lambda ids, *, context=None: seen.append(context) or proposal(ids, context=context)
    context = torch.arange(N)
    layer.loss(hidden.unsqueeze(0), target.unsqueeze(0), context=context.unsqueeze(0))  # (1, N) -> flat (N,)
    assert seen and all(torch.equal(c, context) for c in seen)
    with pytest.raises(ValueError, match="context shape"):
        layer.loss(hidden, target, context=torch.arange(N + 1))
    with pytest.raises(ValueError, match="context id"):
        layer.loss(hidden, target, context=torch.full((N,), V))
    with pytest.raises(TypeError, match="integer class ids"):
        layer.loss(hidden, target, context=torch.zeros(N))


def test_training_with_context_adapts_the_proposal():
    layer = fitted_layer(num_samples=8)
    before_total, before_mix = float(layer.sampler.cumulative[-1]), layer.sampler.mixture_logits.clone()
    hidden = torch.randn(N, H)
    layer.loss(hidden, torch.tensor([10, 11, 12, 13, 14]), context=torch.tensor([0, 1, 2, 3, 4]))
    layer.sampler.refresh()
    assert float(layer.sampler.cumulative[-1]) == before_total + 5  # five more (previous, target) pairs
    assert not torch.equal(layer.sampler.mixture_logits, before_mix)


def test_defaults_and_options():
    layer = bigvocab.create_output("ais", H, 200)
    assert type(layer.sampler).registered_name == "bigram"
    assert (layer.num_samples, layer.min_ess, layer.max_samples, layer.shared) == (64, 16.0, 1024, False)
    with pytest.raises(ConfigError, match="max_samples=4 is smaller"):
        bigvocab.create_output("ais", H, V, num_samples=8, max_samples=4)
    with pytest.raises(ConfigError, match="min_ess"):
        bigvocab.create_output("ais", H, V, min_ess=0)
