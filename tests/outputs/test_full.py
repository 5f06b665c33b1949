"""``full`` against PyTorch's dense cross-entropy, and its memory bound."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import bigvocab
from bigvocab.outputs import functional


def _dense_reference(layer, hidden, target):
    return F.cross_entropy(F.linear(hidden, layer.weight, layer.bias), target, reduction="none")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
def test_loss_and_gradients_match_cross_entropy(bias, chunk):
    torch.manual_seed(1)
    layer = bigvocab.create_output("full", 12, 50, bias=bias, max_chunk_elements=None if chunk is None else chunk * 9)
    if bias:
        torch.nn.init.normal_(layer.bias)
    hidden = torch.randn(9, 12, requires_grad=True)
    target = torch.randint(0, 50, (9,))

    ours = layer.loss(hidden, target, reduction="none")
    grads = torch.autograd.grad(ours.sum(), [hidden, *layer.parameters()])
    ref = _dense_reference(layer, hidden, target)
    ref_grads = torch.autograd.grad(ref.sum(), [hidden, *layer.parameters()])

    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("budget", [20, None], ids=["chunks-recomputed", "one-chunk-kept"])
def test_upstream_gradient_weights_each_example(budget):
    """A non-uniform upstream gradient (weighted loss) must flow through the custom backward,
    whether it recomputes the chunks or rescales the one chunk the forward kept."""
    layer = bigvocab.create_output("full", 5, 30, max_chunk_elements=budget).double()
    hidden = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 29, 3, 3])
    weights = torch.tensor([0.5, -2.0, 1.0, 3.0], dtype=torch.float64)
    torch.autograd.gradcheck(lambda h: (layer.loss(h, target, reduction="none") * weights).sum(), (hidden,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "weighted"])
def test_row_blocked_step_matches_cross_entropy(monkeypatch, reduction):
    """``full`` asks for row blocks (its rows weigh alike): with blocks of 4 whole rows in the
    budget, 10 rows take three blocks, and every gradient matches the dense cross-entropy, also
    when the caller weighs the per-example losses after all (the recomputed fallback)."""
    monkeypatch.setattr(functional, "MIN_ROW_BLOCK", 4)
    calls = []
    original = functional._row_blocked_pass
    monkeypatch.setattr(functional, "_row_blocked_pass", lambda *a: calls.append(1) or original(*a))
    torch.manual_seed(2)
    layer = bigvocab.create_output("full", 6, 40, max_chunk_elements=4 * 40)
    torch.nn.init.normal_(layer.bias)
    hidden = torch.randn(10, 6, requires_grad=True)
    target = torch.randint(0, 40, (10,))
    weights = torch.linspace(-1.0, 2.0, 10)

    def reduce(losses):
        return (
            losses.mean() if reduction == "mean" else losses.sum() if reduction == "sum" else (losses * weights).sum()
        )

    grads = torch.autograd.grad(reduce(layer.loss(hidden, target, reduction="none")), [hidden, *layer.parameters()])
    ref_grads = torch.autograd.grad(reduce(_dense_reference(layer, hidden, target)), [hidden, *layer.parameters()])
    assert calls, "the row-blocked pass was not taken"
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_a_second_backward_through_the_kept_chunk_gives_the_same_gradient():
    layer = bigvocab.create_output("full", 5, 30)
    hidden = torch.randn(4, 5, requires_grad=True)
    loss = layer.loss(hidden, torch.tensor([0, 29, 3, 3]))
    first = torch.autograd.grad(loss, hidden, retain_graph=True)[0]
    torch.testing.assert_close(torch.autograd.grad(loss, hidden)[0], first)


def test_weight_tying_shares_the_parameter():
    layer = bigvocab.create_output("full", 8, 40)
    embedding = torch.nn.Embedding(40, 8)
    layer.tie_weights(embedding)
    assert layer.weight is embedding.weight
    with pytest.raises(bigvocab.ConfigError, match="cannot tie"):
        layer.tie_weights(torch.nn.Embedding(41, 8))


class _LargestTensor(TorchDispatchMode):
    """Records the largest tensor any operator produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel())
        return out


def test_training_step_never_materialises_the_logits():
    """With N*V logits far larger than both the weights and the chunk budget, no operator of a
    forward+backward may produce a tensor bigger than the weights (or the chunk)."""
    num_rows, hidden_size, num_classes, budget = 512, 4, 3000, 4096
    layer = bigvocab.create_output("full", hidden_size, num_classes, max_chunk_elements=budget)
    hidden = torch.randn(num_rows, hidden_size, requires_grad=True)
    target = torch.randint(0, num_classes, (num_rows,))
    with _LargestTensor() as probe:
        layer.loss(hidden, target).backward()
    assert probe.largest <= max(num_classes * hidden_size, budget)
    assert num_rows * num_classes > 100 * probe.largest


def test_topk_is_exact_across_chunk_boundaries():
    layer = bigvocab.create_output("full", 6, 101, max_chunk_elements=3 * 10)
    hidden = torch.randn(3, 6)
    values, ids = layer.topk(hidden, 15)
    ref_values, ref_ids = F.log_softmax(layer.logits(hidden), 1).topk(15)
    torch.testing.assert_close(values, ref_values)
    assert torch.equal(ids, ref_ids)
