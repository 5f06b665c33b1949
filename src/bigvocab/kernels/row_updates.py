"""Running a compiled optimiser update over the distinct rows a sparse gradient touches.

Adagrad (:mod:`~bigvocab.kernels.adagrad`), row-wise Adagrad
(:mod:`~bigvocab.kernels.rowwise_adagrad`) and lazy Adam (:mod:`~bigvocab.kernels.sparse_adam`)
each step a row from its own gradient row and state, so their kernels share one calling
convention, ``kernel(weight, *states, rows, values, *scalars, lo, hi)``, and one driver that
hands them numpy views of the tensors and splits the rows over the threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from bigvocab.kernels.threads import run_in_ranges


def update_rows(
    kernel: Callable[..., None],
    param: Tensor,
    states: Sequence[np.ndarray],
    rows: Tensor,
    values: Tensor,
    scalars: Sequence[float],
) -> None:
    """``kernel`` over the distinct ``rows`` (U,) of ``param`` (V, ...) (CPU, float32 or float64,
    contiguous), in place: ``states`` are the optimiser's per-row arrays as numpy views (V, D) or
    (V,), ``values`` (U, ...) the rows' gradient, ``scalars`` passed in the weight's dtype."""
    if rows.numel() == 0:
        return
    weight = param.detach().numpy().reshape(param.shape[0], -1)
    scalar = weight.dtype.type
    arrays = (
        weight,
        *states,
        rows.contiguous().numpy(),
        values.contiguous().numpy().reshape(rows.shape[0], -1),
        *(scalar(value) for value in scalars),
    )
    run_in_ranges(kernel, arrays, rows.shape[0], torch.get_num_threads(), work_per_item=weight.shape[1])
