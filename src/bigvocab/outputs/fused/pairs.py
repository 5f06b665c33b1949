"""Pair scores against rows of a fused parameter, its update made in the same backward pass.

The pair kernel path of a sparse layer (:func:`~bigvocab.outputs.functional.row_pair_dots`:
per-example draws, a tree's paths) reads each touched row three times and writes it twice on the
unfused path -- a gathered (U, H) copy, the scores, the hidden states' gradient, the (U, H)
gradient, the update -- and the first fused path still gathers and writes the (U, H) gradient.
Here the forward scores the rows where they lie in the (V, H) weight, and the backward, row by
row, adds the row's share of the hidden states' gradient, forms the row's gradient in a local
buffer and steps the row (:mod:`bigvocab.kernels.fused_pairs`): the row read once and written once
in the backward, no (U, H) array anywhere.

Every fused method's step of a row needs that row's gradient alone (SGD, Adagrad, row-wise
Adagrad, lazy Adam), so it applies while the kernel may write the rows at once: the optimiser
does not clip (the norm needs the whole gradient first, ``FusedRowOptimizer.update_from_pairs``),
and this operation is the only one that read the parameter since its last update (otherwise the
hidden gradient of another would read updated rows, and the parts of the gradient must be summed
first). Otherwise the backward forms the hidden states' gradient in a pass of its own, writes the
(U, H) gradient and hands it to the fused update, as a gather does.
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.outputs.fused.gradients import RowGradient
from bigvocab.outputs.fused.rows import _FusedRows, fused_record


class PairRows(RowGradient):
    """The rows ``unique`` (U,) of a step and the pairs whose scores' gradient sums into theirs
    (:data:`~bigvocab.kernels.fused_pairs.Pairs`); each update sums a row and steps it at once,
    adding the hidden states' gradient into the zeroed (N, H) ``hidden_grad`` from the rows before
    they move (None: not wanted)."""

    def __init__(
        self, unique: Tensor, pairs: tuple[Tensor, Tensor, Tensor, Tensor, Tensor], hidden_grad: Tensor | None
    ) -> None:
        self.unique, self.pairs, self.hidden_grad = unique, pairs, hidden_grad

    def sgd(self, param: Tensor, rate: float) -> None:
        from bigvocab.kernels.fused_pairs import sgd_rows_from_pairs

        sgd_rows_from_pairs(self.pairs, param, self.unique, rate, self.hidden_grad)

    def adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        from bigvocab.kernels.fused_pairs import adagrad_rows_from_pairs

        adagrad_rows_from_pairs(self.pairs, param, self.unique, sums, rate, eps, self.hidden_grad)

    def rowwise_adagrad(self, param: Tensor, sums: Tensor, rate: float, eps: float) -> None:
        from bigvocab.kernels.fused_pairs import rowwise_adagrad_rows_from_pairs

        rowwise_adagrad_rows_from_pairs(self.pairs, param, self.unique, sums, rate, eps, self.hidden_grad)

    def sparse_adam(
        self, param: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, step_size: float, betas: tuple, eps: float
    ) -> None:
        from bigvocab.kernels.fused_pairs import sparse_adam_rows_from_pairs

        sparse_adam_rows_from_pairs(
            self.pairs,
            param,
            self.unique,
            exp_avg,
            exp_avg_sq,
            step_size=step_size,
            betas=betas,
            eps=eps,
            hidden_grad=self.hidden_grad,
        )


class _FusedPairDots(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, unique, example, row, anchor, record: _FusedRows):
        from bigvocab.kernels.fused_pairs import scores_of_rows
        from bigvocab.kernels.pairs import group_pairs

        row_offsets, row_order = group_pairs(row, unique.shape[0])
        ctx.save_for_backward(hidden, unique, example, row, row_offsets, row_order)
        ctx.weight, ctx.record = weight, record
        record.uses += 1
        return scores_of_rows(hidden, weight, unique, example, row_offsets, row_order)

    @staticmethod
    def backward(ctx, grad: Tensor):
        from bigvocab.kernels.pairs import _pair_dots_hidden_grad, _pair_dots_table_grad

        hidden, unique, example, row, row_offsets, row_order = ctx.saved_tensors
        weight, record = ctx.weight, ctx.record
        hidden_grad = hidden.new_zeros(hidden.shape) if ctx.needs_input_grad[0] else None
        rows = PairRows(unique, (grad, hidden, example, row_offsets, row_order), hidden_grad)
        if not (record.uses == 1 and record.optimizer.update_from_pairs(record.param, rows)):
            if hidden_grad is not None:  # before any row moves: it reads the rows as the forward did
                hidden_grad = _pair_dots_hidden_grad(grad, weight, example, unique[row], hidden.shape[0])
            table_grad = _pair_dots_table_grad(grad, hidden, example, row_offsets, row_order, unique.shape[0])
            record.pieces.append((unique, table_grad))
        return hidden_grad, None, None, None, None, grad.new_zeros(0), None


def fused_pair_dots(hidden: Tensor, param: Tensor, unique: Tensor, example: Tensor, row: Tensor) -> Tensor | None:
    """(P,) scores ``hidden[example[p]] . param[unique[row[p]]]`` for hidden (N, H), ``param``
    (V, H) with a fused optimiser, distinct sorted ids ``unique`` (U,) and pairs ``example``,
    ``row`` (P,), differentiable in ``hidden`` (and updating ``param``'s rows in the backward);
    None when ``param`` has no fused optimiser, autograd does not record, or ``param`` is not a
    matrix of rows of ``hidden``'s dtype."""
    record = fused_record(param)
    if record is None or param.dim() != 2 or param.dtype != hidden.dtype:
        return None
    return _FusedPairDots.apply(hidden, param.detach(), unique, example, row, record.anchor, record)
