"""A step's gradient of a fused parameter's touched rows, and the compiled updates that read it.

The fused optimisers (:mod:`bigvocab.outputs.fused`) write each method's step once, against
:class:`RowGradient`; the gradient is either gathered (:class:`GatheredRows`: distinct rows and
their summed gradients) or still to be summed from the pairs that scored the rows
(:class:`~bigvocab.outputs.fused.pairs.PairRows`, one pass).
"""

from __future__ import annotations

from torch import Tensor


class RowGradient:
    """A step's gradient of the distinct rows a parameter's step touched, and the compiled updates
    that read it: gathered (:class:`GatheredRows`), or still to be summed from the pairs that
    scored the rows (:class:`~bigvocab.outputs.fused.pairs.PairRows`). The optimisers write
    their step once against this interface."""

    def sgd(self, param: Tensor, rate: float) -> None:
        raise NotImplementedError

    def adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        raise NotImplementedError

    def rowwise_adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        raise NotImplementedError

    def sparse_adam(
        self, param: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, step_size: float, betas: tuple, eps: float
    ) -> None:
        raise NotImplementedError


class GatheredRows(RowGradient):
    """Distinct sorted ``rows`` (U,) and their gradients ``grads`` (U, ...)."""

    def __init__(self, rows: Tensor, grads: Tensor) -> None:
        self.rows, self.grads = rows, grads

    def sgd(self, param: Tensor, rate: float) -> None:
        param.data.index_add_(0, self.rows, self.grads, alpha=-rate)  # reads and writes each row once

    def adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        from bigvocab.kernels.adagrad import adagrad_rows  # numba loads on first use

        adagrad_rows(param, sums, self.rows, self.grads, rate, eps)

    def rowwise_adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        from bigvocab.kernels.rowwise_adagrad import rowwise_adagrad_rows  # numba loads on first use

        rowwise_adagrad_rows(param, sums, self.rows, self.grads, rate, eps)

    def sparse_adam(
        self, param: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, step_size: float, betas: tuple, eps: float
    ) -> None:
        from bigvocab.kernels.sparse_adam import sparse_adam_rows  # numba loads on first use

        sparse_adam_rows(param, exp_avg, exp_avg_sq, self.rows, self.grads, step_size=step_size, betas=betas, eps=eps)
