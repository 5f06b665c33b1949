"""Adagrad's update of the rows a sparse gradient touches, compiled with numba.

Adagrad (Duchi, Hazan & Singer 2011) keeps a running sum of squared gradients per weight and
scales each step by its inverse square root: for every touched row r,

    sum[r] += g_r ** 2,    w[r] -= lr_t * g_r / (sqrt(sum[r]) + eps).

torch's sparse Adagrad writes this as five sparse-tensor operations (square the values, add them
into the sum, mask the sum back to the touched rows, square root, divide, add into the weight),
each allocating a (rows, H) tensor. :func:`adagrad_rows` reads and writes each touched row of
the weight and of the sum once: at V = 100k, H = 128 and 2,000 touched rows 0.26 ms against
torch's 0.66-0.67 ms, at V = 1M, H = 256 and 12,400 rows 2.4 ms against 14.0-22.0 ms; whole
training steps of the bench's quality runs (V = 100k) 1.1-1.3x faster with ``nce``, ``neg`` and
``hsm``, 1.0-1.14x with ``sampled`` (``docs/design/coalesced-sparse-gradients.md``).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.kernels.row_updates import update_rows


# error_model="numpy": a division by zero gives inf (as torch) instead of raising, which also lets
# the division and the square root vectorise.
@njit(nogil=True, cache=True, error_model="numpy")
def adagrad_row(weight_row: np.ndarray, sum_row: np.ndarray, grad_row: np.ndarray, rate, eps) -> None:
    """One row's Adagrad step, in place (also called by :mod:`~bigvocab.kernels.fused_pairs`)."""
    for d in range(weight_row.shape[0]):
        total = sum_row[d] + grad_row[d] * grad_row[d]
        sum_row[d] = total
        weight_row[d] -= rate * (grad_row[d] / (np.sqrt(total) + eps))


@njit(nogil=True, cache=True, error_model="numpy")
def _adagrad_rows(
    weight: np.ndarray, sums: np.ndarray, rows: np.ndarray, values: np.ndarray, rate, eps, lo: int, hi: int
) -> None:
    """Rows ``rows[lo:hi]`` (distinct) of ``weight`` and ``sums`` (V, D), their gradient rows
    ``values`` (U, D); ``rate`` and ``eps`` in the weight's dtype."""
    for i in range(lo, hi):
        adagrad_row(weight[rows[i]], sums[rows[i]], values[i], rate, eps)


def compiled_adagrad_applies(param: Tensor, sums: Tensor, grad: Tensor) -> bool:
    """Whether :func:`adagrad_rows` takes this update: a CPU float32/float64 parameter and sums,
    contiguous, with a sparse gradient of whole rows (one sparse dimension)."""
    return (
        grad.is_sparse
        and grad.sparse_dim() == 1
        and param.device.type == "cpu"
        and param.dtype in (torch.float32, torch.float64)
        and grad.dtype == param.dtype == sums.dtype
        and param.is_contiguous()
        and sums.is_contiguous()
    )


def adagrad_rows(param: Tensor, sums: Tensor, rows: Tensor, values: Tensor, rate: float, eps: float) -> None:
    """One Adagrad step, in place, of the distinct ``rows`` (U,) of ``param`` (V, ...) and of its
    squared-gradient sums ``sums`` (same shape), whose gradient rows are ``values`` (U, ...): the
    indices and values of a sparse gradient of whole rows (see :func:`compiled_adagrad_applies`),
    each row listed once.
    """
    sums_view = sums.numpy().reshape(param.shape[0], -1)
    update_rows(_adagrad_rows, param, (sums_view,), rows, values, (rate, eps))
