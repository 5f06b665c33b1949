"""Row-wise Adagrad's update of the rows a step touched, compiled with numba.

Row-wise Adagrad (as FBGEMM's table-batched embeddings keep it) holds one accumulator per row, the
running sum of the mean squared gradient of that row, instead of one per weight: for every touched
row r of width D,

    sum[r] += mean_d(g_r[d] ** 2),    w[r] -= lr * g_r / (sqrt(sum[r]) + eps),

so its state is (V,) rather than (V, D), and each touched row is read and written once.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from torch import Tensor

from bigvocab.kernels.row_updates import update_rows


# error_model="numpy": a division by zero gives inf (as torch) instead of raising.
@njit(nogil=True, cache=True, error_model="numpy")
def rowwise_adagrad_row(weight_row: np.ndarray, sums: np.ndarray, r: int, grad_row: np.ndarray, rate, eps) -> None:
    """Row ``r``'s step, in place, its sum ``sums[r]`` (also called by :mod:`~bigvocab.kernels.fused_pairs`)."""
    width = weight_row.shape[0]
    squares = weight_row.dtype.type(0)
    for d in range(width):
        squares += grad_row[d] * grad_row[d]
    total = sums[r] + squares / width
    sums[r] = total
    step = rate / (np.sqrt(total) + eps)
    for d in range(width):
        weight_row[d] -= step * grad_row[d]


@njit(nogil=True, cache=True, error_model="numpy")
def _rowwise_adagrad_rows(
    weight: np.ndarray, sums: np.ndarray, rows: np.ndarray, values: np.ndarray, rate, eps, lo: int, hi: int
) -> None:
    """Rows ``rows[lo:hi]`` (distinct) of ``weight`` (V, D) and ``sums`` (V,), their gradient rows
    ``values`` (U, D); ``rate`` and ``eps`` in the weight's dtype."""
    for i in range(lo, hi):
        rowwise_adagrad_row(weight[rows[i]], sums, rows[i], values[i], rate, eps)


def rowwise_adagrad_rows(param: Tensor, sums: Tensor, rows: Tensor, values: Tensor, rate: float, eps: float) -> None:
    """One row-wise Adagrad step, in place, of the distinct ``rows`` (U,) of ``param`` (V, ...)
    (CPU, float32 or float64, contiguous) and of its per-row sums ``sums`` (V,), whose gradient
    rows are ``values`` (U, ...)."""
    update_rows(_rowwise_adagrad_rows, param, (sums.numpy(),), rows, values, (rate, eps))
