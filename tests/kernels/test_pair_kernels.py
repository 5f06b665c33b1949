"""The compiled pair kernel against the gathered rows and batched product it replaces."""

import pytest
import torch

from bigvocab.kernels import threads as kernel_threads
from bigvocab.kernels.pairs import flat_pair_dots, pair_dots


def _reference(hidden, table, index):
    return torch.bmm(table[index], hidden.unsqueeze(2)).squeeze(2)


@pytest.mark.parametrize("threads", [1, 3])
def test_scores_and_gradients_equal_the_gathered_product_in_float64(monkeypatch, threads):
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)  # small sizes, yet split over threads
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(11, 6, dtype=torch.float64, generator=generator, requires_grad=True)
    table = torch.randn(5, 6, dtype=torch.float64, generator=generator, requires_grad=True)
    index = torch.randint(0, 4, (11, 9), generator=generator)  # repeats, and a row nobody asks for
    upstream = torch.randn(11, 9, dtype=torch.float64, generator=generator)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ours = pair_dots(hidden, table, index)
        hidden_grad, table_grad = torch.autograd.grad(ours, (hidden, table), upstream)
    finally:
        torch.set_num_threads(previous)
    expected = _reference(hidden, table, index)
    expected_hidden, expected_table = torch.autograd.grad(expected, (hidden, table), upstream)
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hidden_grad, expected_hidden, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(table_grad, expected_table, rtol=1e-12, atol=1e-12)
    assert table_grad[4].abs().sum() == 0


def test_float32_matches_within_rounding_and_gradcheck_passes():
    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(64, 32, generator=generator)
    table = torch.randn(50, 32, generator=generator)
    index = torch.randint(0, 50, (64, 20), generator=generator)
    torch.testing.assert_close(pair_dots(hidden, table, index), _reference(hidden, table, index), rtol=1e-5, atol=1e-5)
    small = (
        torch.randn(4, 3, dtype=torch.float64, generator=generator, requires_grad=True),
        torch.randn(3, 3, dtype=torch.float64, generator=generator, requires_grad=True),
        torch.randint(0, 3, (4, 5), generator=generator),
    )
    assert torch.autograd.gradcheck(pair_dots, small)


def test_only_the_hidden_gradient_when_the_table_is_frozen():
    hidden = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    table = torch.randn(2, 4, dtype=torch.float64)
    out = pair_dots(hidden, table, torch.tensor([[0, 1], [1, 1], [0, 0]]))
    (grad,) = torch.autograd.grad(out.sum(), hidden)
    torch.testing.assert_close(grad, torch.stack([table[0] + table[1], 2 * table[1], 2 * table[0]]))


@pytest.mark.parametrize("name", ["nce", "ais", "neg"])
def test_a_layer_gets_the_same_loss_and_gradients_from_the_kernel_and_from_the_product(monkeypatch, name):
    """Per-example draws: the compiled kernel (product advantage 0) and the (N, U) product (an
    advantage no draw count reaches) give one loss and one set of gradients."""
    import bigvocab
    from bigvocab.outputs.scorers import rows

    counts = [1000 // (rank + 1) + 1 for rank in range(300)]
    results = []
    for advantage in (0, 10**9):
        monkeypatch.setattr(rows, "PRODUCT_ADVANTAGE", advantage)
        torch.manual_seed(0)
        layer = bigvocab.create_output(name, 8, 300, counts=counts, dtype=torch.float64, num_samples=20)
        hidden = torch.randn(16, 8, dtype=torch.float64, requires_grad=True)
        target = torch.randint(0, 300, (16,))
        loss = layer.loss(hidden, target)
        loss.backward()
        results.append((loss.detach(), hidden.grad, layer.weight.grad.to_dense()))
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 3])
def test_flat_pairs_of_uneven_counts_equal_the_gathered_products(monkeypatch, threads):
    """A tree's paths: each example names a different number of rows (one none at all), some rows
    are named twice by one example, one row by nobody."""
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    generator = torch.Generator().manual_seed(3)
    hidden = torch.randn(5, 7, dtype=torch.float64, generator=generator, requires_grad=True)
    table = torch.randn(6, 7, dtype=torch.float64, generator=generator, requires_grad=True)
    example = torch.tensor([0, 0, 0, 1, 3, 3, 3, 3, 4, 0, 1])
    row = torch.tensor([2, 0, 2, 4, 1, 1, 3, 0, 2, 4, 3])  # row 5 unnamed, example 2 has no pair
    upstream = torch.randn(example.numel(), dtype=torch.float64, generator=generator)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ours = flat_pair_dots(hidden, table, example, row)
        hidden_grad, table_grad = torch.autograd.grad(ours, (hidden, table), upstream)
    finally:
        torch.set_num_threads(previous)
    expected = (hidden[example] * table[row]).sum(1)
    expected_hidden, expected_table = torch.autograd.grad(expected, (hidden, table), upstream)
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hidden_grad, expected_hidden, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(table_grad, expected_table, rtol=1e-12, atol=1e-12)
    assert hidden_grad[2].abs().sum() == 0 and table_grad[5].abs().sum() == 0
    small = (hidden.detach().clone().requires_grad_(), table.detach().clone().requires_grad_(), example, row)
    assert torch.autograd.gradcheck(flat_pair_dots, small)


def _assert_same_with_and_without_the_kernel(monkeypatch, module, method, **options):
    """Loss and every gradient of ``method`` on 300 Zipf classes, with ``module``'s
    ``pairs_compiled`` forced on and then off, from the same seed."""
    import bigvocab

    counts = [1000 // (rank + 1) + 1 for rank in range(300)]
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(module, "pairs_compiled", lambda hidden, compiled=compiled: compiled)
        torch.manual_seed(0)
        layer = bigvocab.create_output(method, 8, 300, counts=counts, dtype=torch.float64, **options)
        for param in layer.parameters():  # neg starts its rows at zero, which would hide their gradients
            torch.nn.init.normal_(param)
        hidden = torch.randn(16, 8, dtype=torch.float64, requires_grad=True)
        target = torch.randint(0, 300, (16,))
        loss = layer.loss(hidden, target)
        loss.backward()
        grads = [p.grad.to_dense() for p in layer.parameters() if p.grad is not None]
        results.append((loss.detach(), hidden.grad, *grads))
    assert len(results[0]) == len(results[1]) >= 3
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("tree", ["huffman", "balanced", "class"])
def test_hsm_gets_the_same_loss_and_gradients_from_the_kernel_and_from_torch(monkeypatch, tree):
    """The compiled flat pairs against hsm's chunked gathers, on binary and n-ary trees."""
    from bigvocab.outputs import hsm

    _assert_same_with_and_without_the_kernel(monkeypatch, hsm, "hsm", tree=tree)


@pytest.mark.parametrize("method", ["neg", "nce", "sampled", "ais"])
def test_sampling_layers_get_the_same_loss_and_gradients_with_and_without_the_kernel(monkeypatch, method):
    """Per-example draws go to the kernel on CPU, and elsewhere (a GPU, bfloat16) to gathered rows
    scored by a product and a sum per example."""
    from bigvocab.outputs.scorers import rows

    _assert_same_with_and_without_the_kernel(monkeypatch, rows, method)
