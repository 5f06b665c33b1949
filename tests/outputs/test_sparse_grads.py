"""Sparse gradients with distinct, sorted rows are stored marked coalesced after the backward
(``outputs/sparse_grads``): the same values, a mark only where it is true, on copies too."""

from __future__ import annotations

import copy
import io

import pytest
import torch

from bigvocab.outputs import sparse_grads
from bigvocab.outputs.factory import create_output
from bigvocab.outputs.sparse_grads import rows_are_distinct

V, H, N = 200, 8, 16
COUNTS = [1000 // (rank + 1) + 1 for rank in range(V)]


def layer_and_batch(name: str, **options):
    torch.manual_seed(0)
    layer = create_output(name, H, V, counts=COUNTS, **options)
    return layer, torch.randn(N, H), torch.randint(0, V, (N,))


def gradients(layer) -> dict[str, torch.Tensor]:
    return {name: p.grad for name, p in layer.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name, options", [("nce", {}), ("neg", {}), ("hsm", {"tree": "huffman"})])
def test_a_sampling_or_tree_layers_gradient_is_stored_marked_with_the_same_values(name, options, monkeypatch):
    layer, hidden, target = layer_and_batch(name, **options)
    torch.manual_seed(1)
    layer.loss(hidden, target).backward()
    marked = gradients(layer)
    assert marked and all(grad.is_sparse and grad.is_coalesced() for grad in marked.values())

    unmarked_layer, _, _ = layer_and_batch(name, **options)
    monkeypatch.setattr(sparse_grads, "rows_are_distinct", lambda grad: grad.is_coalesced())
    torch.manual_seed(1)
    unmarked_layer.loss(hidden, target).backward()
    for key, grad in gradients(unmarked_layer).items():
        assert not grad.is_coalesced()
        assert torch.equal(grad._indices(), marked[key]._indices())
        assert torch.equal(grad._values(), marked[key]._values())


def test_a_gradient_accumulated_over_two_backwards_sums_its_rows_and_is_marked_only_if_distinct():
    layer, hidden, target = layer_and_batch("neg")
    torch.manual_seed(1)
    layer.loss(hidden, target).backward()
    first = layer.scorer.weight.grad.to_dense()
    torch.manual_seed(2)
    layer.loss(hidden, target).backward()
    accumulated = layer.scorer.weight.grad
    if accumulated.is_coalesced():  # torch merges two coalesced gradients; a concatenation repeats rows
        rows = accumulated._indices()[0]
        assert bool((rows[1:] > rows[:-1]).all())

    alone, _, _ = layer_and_batch("neg")
    torch.manual_seed(2)
    alone.loss(hidden, target).backward()
    torch.testing.assert_close(accumulated.to_dense(), first + alone.scorer.weight.grad.to_dense())


def test_a_gradient_that_repeats_rows_is_left_unmarked():
    weight = torch.nn.Parameter(torch.randn(10, 3))
    sparse_grads.mark_distinct_rows([weight])
    torch.nn.functional.embedding(torch.tensor([4, 1, 4]), weight, sparse=True).sum().backward()
    assert not weight.grad.is_coalesced()
    assert weight.grad.to_dense()[4].tolist() == [2.0, 2.0, 2.0]
    weight.grad = None
    torch.nn.functional.embedding(torch.tensor([1, 4, 7]), weight, sparse=True).sum().backward()
    assert weight.grad.is_coalesced()


def test_a_gradient_on_another_device_is_left_alone_without_waiting_for_it():
    # "meta" stands in for a GPU: reading a comparison's result there raises, as on CUDA it would wait.
    weight = torch.nn.Parameter(torch.empty(10, 3, device="meta"))
    weight.grad = torch.sparse_coo_tensor(
        torch.tensor([[1, 4]], device="meta"), torch.ones(2, 3, device="meta"), (10, 3), check_invariants=False
    )
    sparse_grads._mark(weight)
    assert not weight.grad.is_coalesced()


def deep_copy(layer):
    return copy.deepcopy(layer)


def saved_and_loaded(layer):
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("copy_of", [deep_copy, saved_and_loaded])
def test_a_copy_of_a_layer_is_hooked_on_its_first_loss(copy_of):
    layer, hidden, target = layer_and_batch("nce")
    layer.loss(hidden, target).backward()
    copied = copy_of(layer)
    copied.zero_grad(set_to_none=True)
    copied.loss(hidden, target).backward()
    assert copied.scorer.weight.grad.is_coalesced()
    copied.zero_grad(set_to_none=True)
    copied.loss(hidden, target).backward()  # hooked once, not once per loss
    assert len(copied.scorer.weight._post_accumulate_grad_hooks) == 1


def test_a_loss_without_gradients_hooks_nothing():
    layer, hidden, target = layer_and_batch("nce")
    with torch.no_grad():
        layer.loss(hidden, target)
    assert layer.scorer.weight._post_accumulate_grad_hooks is None


@pytest.mark.parametrize(
    "indices, distinct",
    [
        ([[0, 2, 7]], True),
        ([[4]], True),
        ([[2, 2]], False),
        ([[3, 1]], False),
        ([[0, 1], [1, 0]], False),
    ],
)
def test_rows_are_distinct_only_for_strictly_increasing_rows(indices, distinct):
    index = torch.tensor(indices)
    values = torch.ones(index.shape[1], 2) if index.shape[0] == 1 else torch.ones(index.shape[1])
    size = (8, 2) if index.shape[0] == 1 else (8, 8)
    assert rows_are_distinct(torch.sparse_coo_tensor(index, values, size)) is distinct
