"""The fused row kernels (:mod:`bigvocab.kernels.fused_pairs`) against brute force: each row's step
from its pairs, and the hidden states' gradient formed in the same pass from the rows before they
move, on one thread and split over several."""

import pytest
import torch

from bigvocab.kernels import threads as kernel_threads
from bigvocab.kernels.fused_pairs import adagrad_rows_from_pairs, sgd_rows_from_pairs
from bigvocab.kernels.pairs import group_pairs

V, H, N, P = 40, 6, 9, 60
RATE, EPS = 0.3, 1e-10


def _problem():
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(V, H, dtype=torch.float64, generator=generator)
    hidden = torch.randn(N, H, dtype=torch.float64, generator=generator)
    unique = torch.tensor([0, 3, 4, 17, 18, 39])  # sorted distinct ids
    row = torch.randint(0, unique.shape[0], (P,), generator=generator)  # repeated rows
    example = torch.randint(0, N, (P,), generator=generator)
    grad = torch.randn(P, dtype=torch.float64, generator=generator)
    return weight, hidden, unique, row, example, grad


def _brute_force(weight, hidden, unique, row, example, grad):
    """Each row's gradient Σ_p grad[p] hidden[example[p]] and the hidden states' Σ_p grad[p] w[row[p]],
    pair by pair."""
    row_grad = torch.zeros(unique.shape[0], H, dtype=torch.float64)
    hidden_grad = torch.zeros(N, H, dtype=torch.float64)
    for p in range(P):
        row_grad[row[p]] += grad[p] * hidden[example[p]]
        hidden_grad[example[p]] += grad[p] * weight[unique[row[p]]]
    return row_grad, hidden_grad


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("method", ["sgd", "adagrad"])
def test_a_row_step_and_the_hidden_gradient_in_one_pass_equal_brute_force(monkeypatch, threads, method):
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)  # small sizes, yet split over threads
    weight, hidden, unique, row, example, grad = _problem()
    row_grad, expected_hidden = _brute_force(weight, hidden, unique, row, example, grad)
    expected = weight.clone()
    sums, expected_sums = torch.zeros(V, H, dtype=torch.float64), torch.zeros(V, H, dtype=torch.float64)
    if method == "sgd":
        expected[unique] -= RATE * row_grad
    else:
        expected_sums[unique] += row_grad**2
        expected[unique] -= RATE * row_grad / (expected_sums[unique].sqrt() + EPS)
    offsets, order = group_pairs(row, unique.shape[0])
    hidden_grad = torch.zeros(N, H, dtype=torch.float64)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        pairs = (grad, hidden, example, offsets, order)
        if method == "sgd":
            sgd_rows_from_pairs(pairs, weight, unique, RATE, hidden_grad)
        else:
            adagrad_rows_from_pairs(pairs, weight, unique, sums, RATE, EPS, hidden_grad)
    finally:
        torch.set_num_threads(previous)
    torch.testing.assert_close(weight, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(sums, expected_sums, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hidden_grad, expected_hidden, rtol=1e-12, atol=1e-12)


def test_without_a_hidden_gradient_buffer_the_rows_step_alone():
    weight, hidden, unique, row, example, grad = _problem()
    row_grad, _ = _brute_force(weight, hidden, unique, row, example, grad)
    expected = weight.clone()
    expected[unique] -= RATE * row_grad
    offsets, order = group_pairs(row, unique.shape[0])
    sgd_rows_from_pairs((grad, hidden, example, offsets, order), weight, unique, RATE)
    torch.testing.assert_close(weight, expected, rtol=1e-12, atol=1e-12)
