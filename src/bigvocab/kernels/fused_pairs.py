"""Pair scores read straight from a (V, H) weight, and an SGD step of its rows in the same pass
that forms their gradient, compiled with numba.

:mod:`bigvocab.kernels.pairs` scores pairs against a (U, H) table of gathered rows and writes the
table's (U, H) gradient, which an optimiser then reads to update the weight: a copy of the rows,
their gradient written and read again, and the update's own read and write of the rows. When the
optimiser's update is fused into the backward (:mod:`bigvocab.outputs.fused`), these kernels take
the weight and the distinct ids ``unique`` (U,) instead of the table: the scores read
``weight[unique[u]]`` where it lies, and :func:`sgd_rows_from_pairs` sums each row's gradient in a
local buffer and subtracts it, scaled by the learning rate, from the row -- each touched row read
and written once in the backward, no (U, H) array written (Mudigere et al. 2022, FBGEMM's
table-batched embeddings, do the same on the GPU).

The ranges of rows run on the kernel threads (:func:`~bigvocab.kernels.threads.run_in_ranges`);
the ids are distinct, so no two threads write one row.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.kernels.flags import FAST
from bigvocab.kernels.pairs import _dot
from bigvocab.kernels.threads import run_in_ranges


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


@njit(nogil=True, cache=True, fastmath=FAST)
def _sgd_rows(
    grad: np.ndarray,
    hidden: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    example: np.ndarray,
    weight: np.ndarray,
    unique: np.ndarray,
    rate,
    lo: int,
    hi: int,
) -> None:
    """weight[unique[u]] -= rate * Σ over the pairs p of row u of grad[p] · hidden[example[p]],
    for rows lo:hi; each row's sum is kept in a local buffer, summed in the order of
    :func:`~bigvocab.kernels.pairs._table_grad`'s (so the step equals SGD of that gradient)."""
    width = weight.shape[1]
    total = np.empty(width, dtype=weight.dtype)
    for u in range(lo, hi):
        total[:] = 0.0
        for q in range(offsets[u], offsets[u + 1]):
            p = order[q]
            g = grad[p]
            h = hidden[example[p]]
            for d in range(width):
                total[d] += g * h[d]
        row = weight[unique[u]]
        for d in range(width):
            row[d] -= rate * total[d]


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


def sgd_rows_from_pairs(
    grad: Tensor,
    hidden: Tensor,
    example: Tensor,
    row_offsets: Tensor,
    row_order: Tensor,
    weight: Tensor,
    unique: Tensor,
    rate: float,
) -> None:
    """SGD, in place, of the rows ``unique`` (U,) of ``weight`` (V, H) with the gradient that the
    (P,) gradient ``grad`` of the pair scores gives them: ``weight[unique[u]] -= rate *
    Σ_p grad[p] hidden[example[p]]`` over the pairs of row u (grouped as in :func:`scores_of_rows`)."""
    offsets = row_offsets.numpy()
    arrays = (
        grad.detach().contiguous().numpy(),
        hidden.detach().contiguous().numpy(),
        offsets,
        row_order.numpy(),
        example.contiguous().numpy(),
        weight.detach().numpy(),
        unique.contiguous().numpy(),
        weight.detach().numpy().dtype.type(rate),
    )
    threads = torch.get_num_threads()
    run_in_ranges(_sgd_rows, arrays, unique.shape[0], threads, work=offsets, work_per_item=weight.shape[1])
