"""Target sampling (Jean et al. 2015): the partition vocabulary, the loss as a softmax restricted
to it, and exactness when it covers the whole vocabulary."""

from __future__ import annotations

import torch

import bigvocab

V, H = 30, 4


def test_partition_vocabulary_holds_targets_then_most_frequent():
    layer = bigvocab.create_output("target", H, V, num_samples=6)
    vocabulary, position = layer.partition_vocabulary(torch.tensor([9, 2, 9, 0]))
    assert vocabulary.tolist() == [0, 2, 9, 1, 3, 4]  # targets, then the most frequent others
    assert torch.equal(vocabulary[position], torch.tensor([9, 2, 9, 0]))


def test_top_up_follows_counts_when_given():
    counts = [1.0] * V
    counts[17], counts[5], counts[22] = 90.0, 80.0, 70.0
    layer = bigvocab.create_output("target", H, V, num_samples=4, counts=counts)
    vocabulary, _ = layer.partition_vocabulary(torch.tensor([5]))
    assert vocabulary.tolist() == [5, 17, 22, 0]


def test_more_distinct_targets_than_tau_keeps_them_all():
    layer = bigvocab.create_output("target", H, V, num_samples=3)
    target = torch.tensor([4, 8, 15, 16, 23])
    vocabulary, position = layer.partition_vocabulary(target)
    assert vocabulary.tolist() == [4, 8, 15, 16, 23]
    assert torch.equal(vocabulary[position], target)


def test_loss_is_softmax_over_the_partition_vocabulary():
    torch.manual_seed(0)
    layer = bigvocab.create_output("target", H, V, num_samples=8)
    hidden, target = torch.randn(5, H), torch.tensor([3, 12, 12, 29, 0])
    vocabulary, _ = layer.partition_vocabulary(target)
    logits = layer.logits(hidden).detach()
    for n in range(5):
        restricted = logits[n, vocabulary]
        expected = torch.logsumexp(restricted, 0) - logits[n, target[n]]
        torch.testing.assert_close(layer.loss(hidden, target, reduction="none")[n].detach(), expected)


def test_exact_when_the_partition_covers_the_vocabulary():
    """A partition whose targets are every class has V' = V: the loss is the full softmax."""
    torch.manual_seed(0)
    full = bigvocab.create_output("full", H, V)
    layer = bigvocab.create_output("target", H, V, num_samples=5)
    layer.load_state_dict(full.state_dict())
    target = torch.cat([torch.randperm(V), torch.tensor([3, 3])])
    hidden = torch.randn(V + 2, H, requires_grad=True)
    ours = layer.loss(hidden, target)
    reference = full.loss(hidden, target)
    torch.testing.assert_close(ours, reference)
    ours_grad = torch.autograd.grad(ours, [hidden, layer.weight])
    reference_grad = torch.autograd.grad(reference, [hidden, full.weight])
    torch.testing.assert_close(ours_grad[0], reference_grad[0])
    torch.testing.assert_close(ours_grad[1].to_dense(), reference_grad[1])


def test_gradient_rows_are_the_partition_vocabulary():
    layer = bigvocab.create_output("target", H, V, num_samples=5)
    target = torch.tensor([20, 21, 20])
    layer.loss(torch.randn(3, H), target).backward()
    touched = torch.unique(layer.weight.grad.coalesce().indices()).tolist()
    assert touched == sorted(layer.partition_vocabulary(target)[0].tolist())
