"""Lazy Adam's update of the rows a step touched, compiled with numba.

torch's ``SparseAdam`` (Adam, Kingma & Ba 2015, whose moments move only where a row is touched)
writes the step as a dozen sparse-tensor operations, each allocating a (rows, D) tensor. Here each
touched row of the weight and of both moments is read and written once, with torch's own order of
operations, so the numbers are its numbers to rounding: for every touched row r,

    m[r] += (g_r - m[r]) (1 - beta1),    v[r] += (g_r ** 2 - v[r]) (1 - beta2),
    w[r] -= step_size * m[r] / (sqrt(v[r]) + eps),   step_size = lr sqrt(1 - beta2^t) / (1 - beta1^t).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from torch import Tensor

from bigvocab.kernels.row_updates import update_rows


# error_model="numpy": a division by zero gives inf (as torch) instead of raising.
@njit(nogil=True, cache=True, error_model="numpy")
def sparse_adam_row(
    weight_row: np.ndarray,
    mean_row: np.ndarray,
    square_row: np.ndarray,
    grad_row: np.ndarray,
    step_size,
    keep1,
    keep2,
    eps,
) -> None:
    """One row's step, in place, and its moments' (also called by :mod:`~bigvocab.kernels.fused_pairs`);
    ``keep1`` = 1 - beta1, ``keep2`` = 1 - beta2, all scalars in the weight's dtype."""
    for d in range(weight_row.shape[0]):
        g = grad_row[d]
        mean = mean_row[d] + (g - mean_row[d]) * keep1
        square = square_row[d] + (g * g - square_row[d]) * keep2
        mean_row[d] = mean
        square_row[d] = square
        weight_row[d] += -step_size * (mean / (np.sqrt(square) + eps))


@njit(nogil=True, cache=True, error_model="numpy")
def _sparse_adam_rows(
    weight: np.ndarray,
    exp_avg: np.ndarray,
    exp_avg_sq: np.ndarray,
    rows: np.ndarray,
    values: np.ndarray,
    step_size,
    keep1,
    keep2,
    eps,
    lo: int,
    hi: int,
) -> None:
    """Rows ``rows[lo:hi]`` (distinct) of ``weight``, ``exp_avg``, ``exp_avg_sq`` (V, D), their
    gradient rows ``values`` (U, D)."""
    for i in range(lo, hi):
        r = rows[i]
        sparse_adam_row(weight[r], exp_avg[r], exp_avg_sq[r], values[i], step_size, keep1, keep2, eps)


def sparse_adam_rows(
    param: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    rows: Tensor,
    values: Tensor,
    *,
    step_size: float,
    betas: tuple[float, float],
    eps: float,
) -> None:
    """One lazy Adam step, in place, of the distinct ``rows`` (U,) of ``param`` (V, ...) (CPU,
    float32 or float64, contiguous) and of its moments (same shape), whose gradient rows are
    ``values`` (U, ...); ``step_size`` already holds the bias corrections."""
    moments = (exp_avg.numpy().reshape(param.shape[0], -1), exp_avg_sq.numpy().reshape(param.shape[0], -1))
    scalars = (step_size, 1 - betas[0], 1 - betas[1], eps)
    update_rows(_sparse_adam_rows, param, moments, rows, values, scalars)
