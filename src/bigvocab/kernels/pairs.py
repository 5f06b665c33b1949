"""Scores of chosen (row, class) pairs without materialising the gathered rows, compiled with numba.

A sampling objective with draws per example (NCE's noise, Mnih & Teh 2012; importance sampling,
Bengio & Senécal 2008; negative sampling, Mikolov et al. 2013) asks for s[n, j] = h_n . e_{ids[n, j]}
for N examples and M draws each. Gathering the N·M rows (N·M, H) and scoring them
writes and reads N·M·H floats, and the gradient of the gathered rows is as large again (270 MB each
at N = 1024, M = 257, H = 256), although the step needs only N·M·H multiply-adds over U <= N·M
distinct rows. :func:`pair_dots` computes the scores, and in the backward the gradients of h and of
the U distinct rows, straight from the (U, H) table of distinct rows: memory traffic O((N + U)·H +
N·M) instead of O(N·M·H). A tree's paths (the hierarchical softmax, Morin & Bengio 2005) give each
example a different number of pairs: :func:`flat_pair_dots` takes any P (example, row) pairs.

The pairs are grouped by table row once (a counting sort): the scores and the rows' gradient then
walk the table row by row, each row read or written once while the small (N, H) hidden states
take the random accesses; the hidden states' gradient walks the pairs grouped by example. The
kernels release the GIL and take ranges of table rows (scores, gradient of the rows) or of
examples (gradient of h) on plain Python threads, so no two threads write the same element; the
ranges hold equal numbers of pairs (:func:`~bigvocab.kernels.threads.run_in_ranges`).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.kernels.flags import FAST
from bigvocab.kernels.library import LIBRARY, define
from bigvocab.kernels.threads import run_in_ranges


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """a . b, summed in the rows' own dtype from a zero of that dtype: a float64 literal as the
    start made numba sum float32 rows in float64, half the vector width (the scoring kernel 1.6x
    slower at H = 256, ``docs/design/pair-kernel.md``); starting from ``a[0] * b[0]`` left 255 of 256
    terms, so the vectorised loop ended in a serial tail of 63 (``docs/design/pair-kernel.md``)."""
    total = a.dtype.type(0)
    for d in range(a.shape[0]):
        total += a[d] * b[d]
    return total


@njit(nogil=True, cache=True)
def _group(index: np.ndarray, num_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """A counting sort of the pair positions by ``index`` (P,), values in [0, num_groups): the
    pairs of group g are ``order[offsets[g]:offsets[g + 1]]``, in increasing position."""
    offsets = np.zeros(num_groups + 1, dtype=np.int64)
    for p in range(index.size):
        offsets[index[p] + 1] += 1
    for g in range(num_groups):
        offsets[g + 1] += offsets[g]
    fill = offsets[:-1].copy()
    order = np.empty(index.size, dtype=np.int64)
    for p in range(index.size):
        g = index[p]
        order[fill[g]] = p
        fill[g] += 1
    return offsets, order


@njit(nogil=True, cache=True, fastmath=FAST)
def _dots(
    hidden: np.ndarray,
    table: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    example: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """out[p] = hidden[example[p]] . table[u] for the pairs p of table rows lo:hi: each table row
    is read once, the (N, H) hidden states (small) take the random reads."""
    for u in range(lo, hi):
        row = table[u]
        for q in range(offsets[u], offsets[u + 1]):
            p = order[q]
            out[p] = _dot(hidden[example[p]], row)


@njit(nogil=True, cache=True, fastmath=FAST)
def _hidden_grad(
    grad: np.ndarray,
    table: np.ndarray,
    row_of: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """out[n] = Σ over the pairs p of example n of grad[p] · table[row_of[p]], for examples lo:hi,
    summed in a local row (stores to a fresh row per pair measured 3-4x slower than the random
    reads of table rows)."""
    width = out.shape[1]
    total = np.empty(width, dtype=out.dtype)
    for n in range(lo, hi):
        total[:] = 0.0
        for q in range(offsets[n], offsets[n + 1]):
            p = order[q]
            g = grad[p]
            row = table[row_of[p]]
            for d in range(width):
                total[d] += g * row[d]
        out[n] = total


@njit(nogil=True, cache=True, fastmath=FAST)
def _table_grad(
    grad: np.ndarray,
    hidden: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    example: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """out[u] = Σ over the pairs p of row u of grad[p] · hidden[example[p]], for rows lo:hi;
    ``out`` need not be zeroed (each row is cleared here, in the same pass that sums into it,
    rather than by a separate fill of the whole (U, H) buffer)."""
    for u in range(lo, hi):
        row = out[u]
        row[:] = 0.0
        for q in range(offsets[u], offsets[u + 1]):
            p = order[q]
            g = grad[p]
            h = hidden[example[p]]
            for d in range(row.shape[0]):
                row[d] += g * h[d]


def _group_pairs(index: Tensor, num_groups: int) -> tuple[Tensor, Tensor]:
    offsets, order = _group(index.contiguous().numpy(), num_groups)
    return torch.from_numpy(offsets), torch.from_numpy(order)


def _group_pairs_fake(index: Tensor, num_groups: int) -> tuple[Tensor, Tensor]:
    return index.new_empty(num_groups + 1), index.new_empty(index.shape[0])


#: ``index`` (P,) int64 in [0, num_groups) -> (offsets (num_groups + 1,), order (P,)): the pairs of
#: group g are ``order[offsets[g]:offsets[g + 1]]``, by a counting sort.
group_pairs = define("group_pairs(Tensor index, int num_groups) -> (Tensor, Tensor)", _group_pairs, _group_pairs_fake)


def _scores(
    hidden: Tensor, table: Tensor, example: Tensor, row: Tensor, row_offsets: Tensor, row_order: Tensor
) -> Tensor:
    # detach: a kernel below autograd may still be handed tensors that require grad (FX tracing
    # of a backward), whose numpy view torch refuses; the numbers are the same.
    hidden, table = hidden.detach().contiguous(), table.detach().contiguous()
    out = hidden.new_empty(example.shape[0])
    offsets = row_offsets.numpy()
    arrays = (hidden.numpy(), table.numpy(), offsets, row_order.numpy(), example.contiguous().numpy(), out.numpy())
    run_in_ranges(_dots, arrays, table.shape[0], torch.get_num_threads(), work=offsets, work_per_item=table.shape[1])
    return out


def _scores_fake(
    hidden: Tensor, table: Tensor, example: Tensor, row: Tensor, row_offsets: Tensor, row_order: Tensor
) -> Tensor:
    return hidden.new_empty(example.shape[0])


#: (P,) scores hidden[example[p]] . table[row[p]], the pairs grouped by table row (``row_offsets``,
#: ``row_order``: :data:`group_pairs` of ``row``); differentiable in ``hidden`` and ``table``.
_pair_dots = define(
    "pair_dots(Tensor hidden, Tensor table, Tensor example, Tensor row, Tensor row_offsets, Tensor row_order) -> Tensor",
    _scores,
    _scores_fake,
)


def _hidden_grad_kernel(grad: Tensor, table: Tensor, example: Tensor, row: Tensor, num_examples: int) -> Tensor:
    table, grad = table.detach().contiguous(), grad.detach().contiguous()
    out = table.new_empty(num_examples, table.shape[1])
    by_example = _group(example.contiguous().numpy(), num_examples)
    arrays = (grad.numpy(), table.numpy(), row.contiguous().numpy(), *by_example, out.numpy())
    work = by_example[0]
    run_in_ranges(_hidden_grad, arrays, num_examples, torch.get_num_threads(), work=work, work_per_item=table.shape[1])
    return out


def _hidden_grad_fake(grad: Tensor, table: Tensor, example: Tensor, row: Tensor, num_examples: int) -> Tensor:
    return table.new_empty(num_examples, table.shape[1])


#: (N, H) gradient of the hidden states from the (P,) gradient of the scores: the pairs grouped
#: by example, each example's sum kept in a local row.
_pair_dots_hidden_grad = define(
    "pair_dots_hidden_grad(Tensor grad, Tensor table, Tensor example, Tensor row, int num_examples) -> Tensor",
    _hidden_grad_kernel,
    _hidden_grad_fake,
)


def _table_grad_kernel(
    grad: Tensor, hidden: Tensor, example: Tensor, row_offsets: Tensor, row_order: Tensor, num_rows: int
) -> Tensor:
    hidden, grad = hidden.detach().contiguous(), grad.detach().contiguous()
    out = hidden.new_empty(num_rows, hidden.shape[1])
    offsets = row_offsets.numpy()
    arrays = (grad.numpy(), hidden.numpy(), offsets, row_order.numpy(), example.contiguous().numpy())
    threads = torch.get_num_threads()
    run_in_ranges(_table_grad, (*arrays, out.numpy()), num_rows, threads, work=offsets, work_per_item=hidden.shape[1])
    return out


def _table_grad_fake(
    grad: Tensor, hidden: Tensor, example: Tensor, row_offsets: Tensor, row_order: Tensor, num_rows: int
) -> Tensor:
    return hidden.new_empty(num_rows, hidden.shape[1])


#: (U, H) gradient of the table from the (P,) gradient of the scores, table row by table row.
_pair_dots_table_grad = define(
    "pair_dots_table_grad(Tensor grad, Tensor hidden, Tensor example, Tensor row_offsets, Tensor row_order, "
    "int num_rows) -> Tensor",
    _table_grad_kernel,
    _table_grad_fake,
)


class _PairDotsAutograd(torch.autograd.Function):
    """``bigvocab::pair_dots``'s autograd kernel: the scores below autograd, their backward made
    of the two gradient operators."""

    @staticmethod
    def forward(ctx, hidden, table, example, row, row_offsets, row_order):
        ctx.save_for_backward(hidden, table, example, row, row_offsets, row_order)
        with torch._C._AutoDispatchBelowAutograd():
            return _pair_dots(hidden, table, example, row, row_offsets, row_order)

    @staticmethod
    def backward(ctx, grad: Tensor):
        hidden, table, example, row, row_offsets, row_order = ctx.saved_tensors
        hidden_grad = table_grad = None
        if ctx.needs_input_grad[0]:
            hidden_grad = _pair_dots_hidden_grad(grad, table, example, row, hidden.shape[0])
        if ctx.needs_input_grad[1]:
            table_grad = _pair_dots_table_grad(grad, hidden, example, row_offsets, row_order, table.shape[0])
        return hidden_grad, table_grad, None, None, None, None


# Hidden from Dynamo as the kernels are (:func:`~bigvocab.kernels.library.define`); AOTAutograd
# still traces it, on fake tensors, into the forward and backward graphs.
LIBRARY.impl("pair_dots", torch.compiler.disable(_PairDotsAutograd.apply), "Autograd")


def flat_pair_dots(hidden: Tensor, table: Tensor, example: Tensor, row: Tensor) -> Tensor:
    """(N, H) hidden, (U, H) table, and P pairs (``example`` (P,) in [0, N), ``row`` (P,) in
    [0, U)) -> (P,) scores ``hidden[example[p]] . table[row[p]]``, differentiable in ``hidden``
    and ``table``; a table row no pair names gets a zero gradient.

    CPU float32 or float64 tensors of one dtype; int64 pair indices.
    """
    row_offsets, row_order = group_pairs(row, table.shape[0])
    return _pair_dots(hidden, table, example, row, row_offsets, row_order)


def pair_dots(hidden: Tensor, table: Tensor, index: Tensor) -> Tensor:
    """(N, H) hidden, (U, H) table of rows, (N, M) positions in the table -> (N, M) scores
    ``hidden[n] . table[index[n, j]]``, differentiable in ``hidden`` and ``table``.

    CPU float32 or float64 tensors of one dtype.
    """
    num_rows, width = index.shape
    example = torch.arange(num_rows, device=index.device).repeat_interleave(width)
    return flat_pair_dots(hidden, table, example, index.reshape(-1)).view(num_rows, width)
