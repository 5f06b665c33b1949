"""Pair scores read straight from a (V, H) weight, and an SGD step of its rows in the same pass
that forms their gradient, compiled with numba.

:mod:`bigvocab.kernels.pairs` scores pairs against a (U, H) table of gathered rows and writes the
table's (U, H) gradient, which an optimiser then reads to update the weight: a copy of the rows,
their gradient written and read again, and the update's own read and write of the rows. When the
optimiser's update is fused into the backward (:mod:`bigvocab.outputs.fused`), these kernels take
the weight and the distinct ids ``unique`` (U,) instead of the table: the scores read
``weight[unique[u]]`` where it lies, and the ``*_rows_from_pairs`` functions sum each row's gradient in a
local buffer and apply the optimiser's step to the row at once (SGD, Adagrad, row-wise Adagrad,
lazy Adam: each row's step needs only that row's gradient) -- each touched row read and written
once in the backward, no (U, H) array written (Mudigere et al. 2022, FBGEMM's
table-batched embeddings, do the same on the GPU).

Given a zeroed (N, H) ``hidden_grad``, the same pass also adds each pair's ``grad[p] * row`` into
``hidden_grad[example[p]]`` while the row still holds the values the forward scored, as word2vec's
update does (Mikolov et al. 2013): the backward then reads each touched row once instead of twice
(a separate hidden-gradient pass walks the pairs by example and reads the rows again, at random).
Each example's gradient is then summed in row order rather than pair order (the same terms, rounded
in another order).

The ranges of rows run on the kernel threads (:func:`~bigvocab.kernels.threads.run_in_ranges`);
the ids are distinct, so no two threads write one row, and each range but the first adds into its
own hidden-gradient buffer, summed after.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.kernels.adagrad import adagrad_row
from bigvocab.kernels.flags import FAST
from bigvocab.kernels.pairs import _dot
from bigvocab.kernels.rowwise_adagrad import rowwise_adagrad_row
from bigvocab.kernels.sparse_adam import sparse_adam_row
from bigvocab.kernels.threads import run_in_ranges

#: The (P,) gradient of the pair scores, hidden (N, H), the pairs' examples (P,), and the pairs
#: grouped by row (offsets (U + 1,), order (P,)): what a row's gradient is summed from.
Pairs = tuple[Tensor, Tensor, Tensor, Tensor, Tensor]


@njit(nogil=True, cache=True, fastmath=FAST)
def _dots_of_rows(
    hidden: np.ndarray,
    weight: np.ndarray,
    unique: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    example: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """out[p] = hidden[example[p]] . weight[unique[u]] for the pairs p of rows u in lo:hi."""
    for u in range(lo, hi):
        row = weight[unique[u]]
        for q in range(offsets[u], offsets[u + 1]):
            p = order[q]
            out[p] = _dot(hidden[example[p]], row)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def _row_gradient(grad, hidden, offsets, order, example, u: int, row, hidden_grad, total) -> None:
    """total = Σ over the pairs p of row u of grad[p] · hidden[example[p]], summed in the order of
    :func:`~bigvocab.kernels.pairs._table_grad`'s (so a step equals the optimiser's on that
    gradient); and, unless ``hidden_grad`` has no rows, hidden_grad[example[p]] += grad[p] · row
    (``row`` not yet stepped)."""
    total[:] = 0.0
    with_hidden = hidden_grad.shape[0] > 0
    for q in range(offsets[u], offsets[u + 1]):
        p = order[q]
        g = grad[p]
        n = example[p]
        h = hidden[n]
        for d in range(total.shape[0]):
            total[d] += g * h[d]
        if with_hidden:
            into = hidden_grad[n]
            for d in range(total.shape[0]):
                into[d] += g * row[d]


@njit(nogil=True, cache=True, fastmath=FAST)
def _sgd_rows(grad, hidden, offsets, order, example, weight, unique, hidden_grad, rate, lo: int, hi: int) -> None:
    """weight[unique[u]] -= rate * (row u's gradient), for rows lo:hi."""
    total = np.empty(weight.shape[1], dtype=weight.dtype)
    for u in range(lo, hi):
        row = weight[unique[u]]
        _row_gradient(grad, hidden, offsets, order, example, u, row, hidden_grad, total)
        for d in range(row.shape[0]):
            row[d] -= rate * total[d]


@njit(nogil=True, cache=True, fastmath=FAST)
def _adagrad_rows(
    grad, hidden, offsets, order, example, weight, unique, hidden_grad, sums, rate, eps, lo: int, hi: int
) -> None:
    """Adagrad's step of rows lo:hi (:func:`~bigvocab.kernels.adagrad.adagrad_row`)."""
    total = np.empty(weight.shape[1], dtype=weight.dtype)
    for u in range(lo, hi):
        row = weight[unique[u]]
        _row_gradient(grad, hidden, offsets, order, example, u, row, hidden_grad, total)
        adagrad_row(row, sums[unique[u]], total, rate, eps)


@njit(nogil=True, cache=True, fastmath=FAST)
def _rowwise_adagrad_rows(
    grad, hidden, offsets, order, example, weight, unique, hidden_grad, sums, rate, eps, lo: int, hi: int
) -> None:
    """Row-wise Adagrad's step of rows lo:hi (:func:`~bigvocab.kernels.rowwise_adagrad.rowwise_adagrad_row`)."""
    total = np.empty(weight.shape[1], dtype=weight.dtype)
    for u in range(lo, hi):
        row = weight[unique[u]]
        _row_gradient(grad, hidden, offsets, order, example, u, row, hidden_grad, total)
        rowwise_adagrad_row(row, sums, unique[u], total, rate, eps)


@njit(nogil=True, cache=True, fastmath=FAST)
def _sparse_adam_rows(
    grad,
    hidden,
    offsets,
    order,
    example,
    weight,
    unique,
    hidden_grad,
    exp_avg,
    exp_avg_sq,
    step_size,
    keep1,
    keep2,
    eps,
    lo,
    hi,
) -> None:
    """Lazy Adam's step of rows lo:hi (:func:`~bigvocab.kernels.sparse_adam.sparse_adam_row`)."""
    total = np.empty(weight.shape[1], dtype=weight.dtype)
    for u in range(lo, hi):
        r = unique[u]
        row = weight[r]
        _row_gradient(grad, hidden, offsets, order, example, u, row, hidden_grad, total)
        sparse_adam_row(row, exp_avg[r], exp_avg_sq[r], total, step_size, keep1, keep2, eps)


def scores_of_rows(
    hidden: Tensor, weight: Tensor, unique: Tensor, example: Tensor, row_offsets: Tensor, row_order: Tensor
) -> Tensor:
    """(P,) scores hidden[example[p]] . weight[unique[row[p]]] for hidden (N, H), weight (V, H),
    the distinct ids ``unique`` (U,), the pairs grouped by their position in ``unique``
    (``row_offsets`` (U + 1,), ``row_order`` (P,): :data:`~bigvocab.kernels.pairs.group_pairs`)."""
    out = hidden.new_empty(example.shape[0])
    offsets = row_offsets.numpy()
    arrays = (
        hidden.detach().contiguous().numpy(),
        weight.detach().numpy(),
        unique.contiguous().numpy(),
        offsets,
        row_order.numpy(),
        example.contiguous().numpy(),
        out.numpy(),
    )
    threads = torch.get_num_threads()
    run_in_ranges(_dots_of_rows, arrays, unique.shape[0], threads, work=offsets, work_per_item=weight.shape[1])
    return out


def _run(
    kernel,
    pairs: Pairs,
    weight: Tensor,
    unique: Tensor,
    hidden_grad: Tensor | None,
    state: tuple[Tensor, ...],
    scalars: tuple,
) -> None:
    """``kernel`` over ranges of the rows ``unique`` (U,) of ``weight`` (V, H), with the pairs'
    gradient, the zeroed (N, H) ``hidden_grad`` to add the hidden states' gradient into (None: not
    wanted), the optimiser's ``state`` tensors (each with V rows) and ``scalars`` (cast to the
    weight's dtype)."""
    grad, hidden, example, row_offsets, row_order = pairs
    offsets = row_offsets.numpy()
    values = weight.detach().numpy()
    into = values[:0] if hidden_grad is None else hidden_grad.numpy()  # no rows: the kernel skips it
    arrays = (
        grad.detach().contiguous().numpy(),
        hidden.detach().contiguous().numpy(),
        offsets,
        row_order.numpy(),
        example.contiguous().numpy(),
        values,
        unique.contiguous().numpy(),
        into,
        *(tensor.numpy() for tensor in state),
        *(values.dtype.type(scalar) for scalar in scalars),
    )
    threads = torch.get_num_threads()
    # Each pair adds H multiply-adds to its row's gradient, and H more to its example's.
    work_per_item = weight.shape[1] * (1 if hidden_grad is None else 2)
    summed = None if hidden_grad is None else _HIDDEN_GRAD
    run_in_ranges(kernel, arrays, unique.shape[0], threads, work=offsets, work_per_item=work_per_item, summed=summed)


#: The position of ``hidden_grad`` among a row kernel's arguments, which ranges on other threads
#: each take a zeroed copy of (:func:`~bigvocab.kernels.threads.run_in_ranges`).
_HIDDEN_GRAD = 7


def sgd_rows_from_pairs(
    pairs: Pairs, weight: Tensor, unique: Tensor, rate: float, hidden_grad: Tensor | None = None
) -> None:
    """SGD, in place, of the rows ``unique`` (U,) of ``weight`` (V, H) with the gradient the
    pairs give them (each row's ``Σ_p grad[p] hidden[example[p]]``); with a zeroed (N, H)
    ``hidden_grad``, the hidden states' gradient added into it from the rows before their step."""
    _run(_sgd_rows, pairs, weight, unique, hidden_grad, (), (rate,))


def adagrad_rows_from_pairs(
    pairs: Pairs,
    weight: Tensor,
    unique: Tensor,
    sums: Tensor,
    rate: float,
    eps: float,
    hidden_grad: Tensor | None = None,
) -> None:
    """Adagrad, in place, of the rows ``unique`` of ``weight`` and of its sums (V, H)
    (``hidden_grad`` as :func:`sgd_rows_from_pairs`)."""
    _run(_adagrad_rows, pairs, weight, unique, hidden_grad, (sums,), (rate, eps))


def rowwise_adagrad_rows_from_pairs(
    pairs: Pairs,
    weight: Tensor,
    unique: Tensor,
    sums: Tensor,
    rate: float,
    eps: float,
    hidden_grad: Tensor | None = None,
) -> None:
    """Row-wise Adagrad, in place, of the rows ``unique`` of ``weight`` and of its sums (V,)
    (``hidden_grad`` as :func:`sgd_rows_from_pairs`)."""
    _run(_rowwise_adagrad_rows, pairs, weight, unique, hidden_grad, (sums,), (rate, eps))


def sparse_adam_rows_from_pairs(
    pairs: Pairs,
    weight: Tensor,
    unique: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    *,
    step_size: float,
    betas: tuple[float, float],
    eps: float,
    hidden_grad: Tensor | None = None,
) -> None:
    """Lazy Adam, in place, of the rows ``unique`` of ``weight`` and of its moments (V, H);
    ``step_size`` already holds the bias corrections (``hidden_grad`` as :func:`sgd_rows_from_pairs`)."""
    scalars = (step_size, 1 - betas[0], 1 - betas[1], eps)
    _run(_sparse_adam_rows, pairs, weight, unique, hidden_grad, (exp_avg, exp_avg_sq), scalars)
