"""The Adagrad optimiser's compiled update of sparse rows against torch's own Adagrad: the same
weights, sums and step counts after several steps, for every option the compiled path takes, and
torch's path (and its errors) for the rest."""

from __future__ import annotations

import pytest
import torch

import bigvocab.kernels.adagrad as sparse_adagrad
import bigvocab.kernels.threads as kernel_threads
from bigvocab.train.optimizers import Adagrad

V, H = 50, 6
STEPS = 5


def row_gradient(generator, dtype, *, shape, repeated):
    """A sparse gradient of whole rows: distinct increasing rows marked coalesced (what
    ``gather_rows`` gives), or repeated unsorted rows (what ``nn.Embedding(sparse=True)`` gives)."""
    if repeated:
        rows = torch.randint(0, shape[0], (12,), generator=generator)
        return torch.sparse_coo_tensor(
            rows.unsqueeze(0), torch.randn(12, *shape[1:], generator=generator, dtype=dtype), shape
        )
    rows = torch.randperm(shape[0], generator=generator)[:9].sort().values
    values = torch.randn(9, *shape[1:], generator=generator, dtype=dtype)
    return torch.sparse_coo_tensor(rows.unsqueeze(0), values, shape, is_coalesced=True)


def make_parameters(dtype):
    generator = torch.Generator().manual_seed(0)
    shapes = [(V, H), (V, H), (V,), (4, 3)]  # rows, repeated rows, a bias, a dense parameter
    return [torch.nn.Parameter(torch.randn(*shape, generator=generator, dtype=dtype)) for shape in shapes]


def set_gradients(params, generator):
    weight, embedding, bias, dense = params
    dtype = weight.dtype
    weight.grad = row_gradient(generator, dtype, shape=(V, H), repeated=False)
    embedding.grad = row_gradient(generator, dtype, shape=(V, H), repeated=True)
    bias.grad = row_gradient(generator, dtype, shape=(V,), repeated=False)
    dense.grad = torch.randn(4, 3, generator=generator, dtype=dtype)


def train(optimizer_class, dtype, options, steps=STEPS, state=None):
    params = make_parameters(dtype)
    optimizer = optimizer_class(params, **options)
    if state is not None:
        optimizer.load_state_dict(state)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        set_gradients(params, generator)
        optimizer.step()
    return params, optimizer


TOLERANCE = {torch.float32: dict(rtol=2e-6, atol=2e-6), torch.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "options",
    [
        {"lr": 0.1},
        {"lr": 0.5, "lr_decay": 0.1, "initial_accumulator_value": 0.3, "eps": 1e-3},
        {"lr": 0.1, "maximize": True},
    ],
)
def test_compiled_rows_match_torch_adagrad(monkeypatch, dtype, options):
    calls = []
    compiled = sparse_adagrad.adagrad_rows

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return compiled(*args, **kwargs)

    monkeypatch.setattr(sparse_adagrad, "adagrad_rows", counted)
    ours, our_optimizer = train(Adagrad, dtype, options)
    reference, reference_optimizer = train(torch.optim.Adagrad, dtype, options)
    assert len(calls) == 3 * STEPS  # the three sparse parameters take the compiled path, every step
    for mine, theirs in zip(ours, reference):
        torch.testing.assert_close(mine.detach(), theirs.detach(), **TOLERANCE[dtype])
        mine_state, their_state = our_optimizer.state[mine], reference_optimizer.state[theirs]
        torch.testing.assert_close(mine_state["sum"], their_state["sum"], **TOLERANCE[dtype])
        assert float(mine_state["step"]) == float(their_state["step"]) == STEPS


def test_rows_split_across_threads_match_one_thread(monkeypatch):
    """Two threads take disjoint ranges of the touched rows."""
    one, _ = train(Adagrad, torch.float32, {"lr": 0.1})
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        two, _ = train(Adagrad, torch.float32, {"lr": 0.1})
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two):
        assert torch.equal(a, b)


def test_state_loads_across_torch_and_compiled_adagrad():
    """A checkpoint of torch's Adagrad resumes in ours (and the other way) with the same result."""
    _, first = train(torch.optim.Adagrad, torch.float64, {"lr": 0.1}, steps=2)
    resumed, _ = train(Adagrad, torch.float64, {"lr": 0.1}, steps=3, state=first.state_dict())
    _, ours_first = train(Adagrad, torch.float64, {"lr": 0.1}, steps=2)
    reverse, _ = train(torch.optim.Adagrad, torch.float64, {"lr": 0.1}, steps=3, state=ours_first.state_dict())
    for a, b in zip(resumed, reverse):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_weight_decay_with_sparse_gradients_keeps_torchs_error():
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        train(Adagrad, torch.float32, {"lr": 0.1, "weight_decay": 0.01})


def test_empty_sparse_gradient_counts_a_step_and_changes_nothing():
    param = torch.nn.Parameter(torch.randn(V, H))
    before = param.detach().clone()
    optimizer = Adagrad([param], lr=0.1)
    param.grad = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0, H), (V, H))
    optimizer.step()
    assert torch.equal(param.detach(), before) and float(optimizer.state[param]["step"]) == 1
