"""The pieces the sampling layers share (``outputs/sampling.py``) and behaviour every sampling
layer must have: only the touched rows get gradient, evaluation mode leaves the sampler alone,
a few SGD steps lower the *exact* NLL, and options are checked with clear errors."""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.sampling import accidental_hits, resolve_sampler, sampled_softmax_loss

SAMPLING_LAYERS = ["sampled", "ais", "target", "nce", "neg"]
V, H = 40, 5


def counts() -> list[int]:
    return [int(1000 / (i + 1)) + 1 for i in range(V)]


def test_accidental_hits_shared_and_per_example():
    target = torch.tensor([1, 2, 3])
    shared = torch.tensor([3, 1, 1, 0])
    expected = torch.tensor([[0, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(accidental_hits(target, shared), expected)
    per_example = torch.tensor([[1, 1], [0, 2], [3, 4]])
    assert torch.equal(accidental_hits(target, per_example), torch.tensor([[1, 1], [0, 1], [1, 0]], dtype=torch.bool))


def composed_loss(target_logit, sampled_logit, target_count, sampled_count, hits):
    """The loss from torch's own operations: the reference for the hand-written backward."""
    sampled = sampled_logit - sampled_count
    if hits is not None:
        sampled = sampled.masked_fill(hits, float("-inf"))
    logits = torch.cat([(target_logit - target_count).unsqueeze(1), sampled], dim=1)
    return torch.logsumexp(logits, dim=1) - logits[:, 0]


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("with_hits", [True, False])
def test_sampled_softmax_loss_matches_composed_loss_and_its_gradients(shared, with_hits):
    generator = torch.Generator().manual_seed(0)
    n, k = 5, 7
    inputs = [
        torch.randn(n, generator=generator, dtype=torch.float64),
        3 * torch.randn(n, k, generator=generator, dtype=torch.float64),
        torch.randn(n, generator=generator, dtype=torch.float64),
        torch.randn(k if shared else (n, k), generator=generator, dtype=torch.float64),
    ]
    hits = (torch.rand(n, k, generator=generator) < 0.3) if with_hits else None
    if with_hits:
        hits[0] = True  # a row whose every sample is its target: the loss is then 0
    weights = torch.rand(n, generator=generator, dtype=torch.float64)
    results = []
    for loss_of in (sampled_softmax_loss, composed_loss):
        leaves = [tensor.clone().requires_grad_(True) for tensor in inputs]
        loss = loss_of(*leaves, hits)
        (loss * weights).sum().backward()
        results.append((loss.detach(), [leaf.grad for leaf in leaves]))
    (ours, our_grads), (reference, reference_grads) = results
    torch.testing.assert_close(ours, reference, rtol=1e-12, atol=1e-12)
    for our_grad, reference_grad in zip(our_grads, reference_grads):
        torch.testing.assert_close(our_grad, reference_grad, rtol=1e-12, atol=1e-12)
    if with_hits:
        assert float(ours[0]) == 0.0 and bool((our_grads[1][hits] == 0).all())


def test_sampled_softmax_loss_brute_force_and_single_backward():
    target_logit, sampled_logit = (
        torch.tensor([0.5, -1.0], dtype=torch.float64),
        torch.tensor([[2.0, 0.0, -3.0], [1.0, 1.0, 4.0]], dtype=torch.float64),
    )
    target_count, sampled_count = (
        torch.tensor([0.1, 0.2], dtype=torch.float64),
        torch.tensor([0.0, -1.0, 0.5], dtype=torch.float64),
    )
    hits = torch.tensor([[False, True, False], [False, False, False]])
    loss = sampled_softmax_loss(target_logit, sampled_logit, target_count, sampled_count, hits)
    first = [0.5 - 0.1, 2.0 - 0.0, -3.0 - 0.5]  # the hit (0.0 + 1.0) left out
    second = [-1.0 - 0.2, 1.0, 2.0, 3.5]
    for value, scores in zip(loss.tolist(), (first, second)):
        assert value == pytest.approx(math.log(sum(math.exp(s) for s in scores)) - scores[0], rel=1e-12)
    leaf = sampled_logit.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(
        sampled_softmax_loss(target_logit, leaf, target_count, sampled_count).sum(), leaf, create_graph=True
    )
    with pytest.raises(RuntimeError, match="does not require grad|once"):  # no silent second derivative
        grad.sum().backward()


def test_resolve_sampler():
    uniform = bigvocab.create_sampler("uniform", V)
    assert resolve_sampler(uniform, V, None, "unigram") is uniform
    assert type(resolve_sampler("log_uniform", V, None, "unigram")).registered_name == "log_uniform"
    assert resolve_sampler(None, V, counts(), "unigram", power=0.5).power == 0.5
    with pytest.raises(ConfigError, match="covers 7 classes"):
        resolve_sampler(bigvocab.create_sampler("uniform", 7), V, None, "unigram")
    with pytest.raises(ConfigError, match="registered name or a Sampler"):
        resolve_sampler(3, V, None, "unigram")
    with pytest.raises(bigvocab.UnknownNameError, match="did you mean 'uniform'"):
        resolve_sampler("unifrom", V, None, "unigram")


def build(name: str, **options):
    torch.manual_seed(0)
    return bigvocab.create_output(name, H, V, counts=counts(), num_samples=8, **options)


@pytest.mark.parametrize("name", SAMPLING_LAYERS)
def test_only_touched_rows_get_gradient(name):
    layer = build(name)
    hidden, target = torch.randn(6, H), torch.randint(0, V, (6,))
    layer.loss(hidden, target).backward()
    grad = layer.weight.grad
    assert grad.is_sparse
    touched = torch.unique(grad.coalesce().indices())
    assert touched.numel() < V
    before = layer.weight.detach().clone()
    torch.optim.SGD(layer.parameters(), lr=0.5).step()
    changed = torch.nonzero((layer.weight.detach() != before).any(1)).squeeze(1)
    assert set(changed.tolist()) <= set(touched.tolist())
    assert set(target.tolist()) <= set(touched.tolist())


@pytest.mark.parametrize("name", ["sampled", "nce", "neg", "ais"])
def test_eval_mode_does_not_adapt_the_sampler(name):
    layer = build(name, sampler="learned")
    hidden, target = torch.randn(6, H), torch.zeros(6, dtype=torch.long)
    start = float(layer.sampler.counts[0])
    layer.eval()
    layer.loss(hidden, target)
    assert float(layer.sampler.counts[0]) == start
    layer.train()
    layer.loss(hidden, target)
    assert float(layer.sampler.counts[0]) == start + 6


@pytest.mark.parametrize("name", SAMPLING_LAYERS)
def test_training_lowers_the_exact_nll(name):
    """Targets follow ``counts`` (as the training data the counts describe) and hidden states
    carry the target's group (one of 4 prototypes); 60 SGD steps on the sampled objective must
    lower the exact NLL clearly (by 0.5 nats from ~4.2; the full softmax reaches ~1.7)."""
    generator = torch.Generator().manual_seed(1)
    prototypes = torch.randn(4, H, generator=generator) * 2
    target = torch.multinomial(torch.tensor(counts(), dtype=torch.float64), 64, replacement=True, generator=generator)
    hidden = prototypes[target % 4] + 0.1 * torch.randn(64, H, generator=generator)
    layer = build(name)
    with torch.no_grad():
        start = float(-layer.log_prob(hidden, target).mean())
    optimiser = torch.optim.SGD(layer.parameters(), lr=0.5)
    for _ in range(60):
        optimiser.zero_grad()
        layer.loss(hidden, target).backward()
        optimiser.step()
    with torch.no_grad():
        end = float(-layer.log_prob(hidden, target).mean())
    assert end < start - 0.5, (start, end)


@pytest.mark.parametrize("name", ["sampled", "nce", "neg", "ais", "target"])
@pytest.mark.parametrize(
    "num_samples, match", [(0, "positive"), (V, "smaller than the number of classes"), (2.5, "positive")]
)
def test_bad_num_samples(name, num_samples, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_output(name, H, V, counts=counts(), num_samples=num_samples)


@pytest.mark.parametrize("name", ["nce", "neg", "target"])
def test_defaults_that_read_counts_refuse_to_guess_them(name):
    with pytest.raises(ConfigError, match=r"needs counts= \(the training frequency of each class"):
        bigvocab.create_output(name, H, V)


@pytest.mark.parametrize("name", ["sampled", "ais"])
def test_defaults_work_without_counts(name):
    layer = bigvocab.create_output(name, H, V)
    assert torch.isfinite(layer.loss(torch.randn(3, H), torch.tensor([0, 5, 39])))


def test_misspelt_option_is_named():
    with pytest.raises(ConfigError, match="did you mean 'num_samples'"):
        bigvocab.create_output("sampled", H, V, num_sample=4)
