"""Small pure functions that the output layers compose.

* :func:`gather_rows` -- rows of a parameter with a *sparse* gradient (only the touched rows),
  which is what lets sampled and tree-structured layers train in time independent of V.
* :func:`chunked_logsumexp` -- log Z and the target logit of a linear softmax computed over
  vocabulary chunks with a running log-sum-exp and a hand-written backward, so the (N, V) logits
  never exist at once.
* :func:`chunked_topk` -- exact top-k of a linear softmax, chunk by chunk.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

#: Chunks hold at most this many logits (64 MiB in float32) unless the caller says otherwise.
DEFAULT_CHUNK_ELEMENTS = 1 << 24


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, param: Tensor, ids: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(ids)
        ctx.param_shape = param.shape
        return param.index_select(0, ids)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        (ids,) = ctx.saved_tensors
        # ids are in range by construction (they indexed the forward), so skip the invariant check.
        sparse = torch.sparse_coo_tensor(ids.unsqueeze(0), grad, ctx.param_shape, check_invariants=False)
        return sparse, None


def gather_rows(param: Tensor, ids: Tensor, *, sparse: bool = True) -> Tensor:
    """``param[ids]`` for ids of shape (M,); with ``sparse`` its gradient is a sparse COO tensor
    holding only the M touched rows, so an SGD step costs O(M·H) rather than O(V·H)."""
    if sparse and param.requires_grad and torch.is_grad_enabled():
        return _GatherRows.apply(param, ids)
    return param.index_select(0, ids)


def chunk_size_for(num_rows: int, num_classes: int, max_elements: Optional[int]) -> int:
    """Classes per chunk so that a (num_rows, chunk) block holds at most ``max_elements``."""
    budget = DEFAULT_CHUNK_ELEMENTS if max_elements is None else max_elements
    return max(1, min(num_classes, budget // max(1, num_rows)))


def _chunk_logits(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], start: int, stop: int) -> Tensor:
    if bias is None:
        return hidden @ weight[start:stop].t()
    # The bias enters the product's output (addmm) rather than a second (N, chunk) pass.
    return torch.addmm(bias[start:stop], hidden, weight[start:stop].t())


def _logsumexp_(logits: Tensor) -> tuple[Tensor, Tensor]:
    """(peak, log Σ exp) over dim 1 of (N, C) ``logits``, which it overwrites with
    exp(logits - peak): no (N, C) temporaries."""
    peak = logits.amax(dim=1)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    return peak, peak + torch.log(logits.sub_(peak.unsqueeze(1)).exp_().sum(dim=1))


class _ChunkedLogSumExp(torch.autograd.Function):
    """(log Z, target logit) of ``hidden @ weight.T + bias`` without the (N, V) matrix.

    When the whole vocabulary fits in one chunk (N·V within the memory budget), the forward keeps
    that chunk's exp(logits - peak) and the backward rescales it into the softmax: three matrix
    products a step, the least a softmax step can do. Otherwise the backward recomputes each
    chunk's logits, so peak memory is the weights, their gradient and one (N, chunk) block: the
    price is one extra matrix product per chunk.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, chunk):  # type: ignore[override]
        num_classes = weight.shape[0]
        log_z = hidden.new_full((hidden.shape[0],), float("-inf"))
        ctx.kept = None
        for start in range(0, num_classes, chunk):
            logits = _chunk_logits(hidden, weight, bias, start, min(start + chunk, num_classes))
            peak, chunk_log_z = _logsumexp_(logits)
            log_z = torch.logaddexp(log_z, chunk_log_z)
        if chunk >= num_classes and any(ctx.needs_input_grad[:3]):
            ctx.kept = (logits, peak)  # the one chunk, as exp(logits - peak)
        target_logit = (hidden * weight.index_select(0, target)).sum(1)
        if bias is not None:
            target_logit = target_logit + bias.index_select(0, target)
        ctx.save_for_backward(hidden, weight, bias, target, log_z)
        ctx.chunk = chunk
        return log_z, target_logit

    @staticmethod
    def backward(ctx, grad_log_z, grad_target):  # type: ignore[override]
        hidden, weight, bias, target, log_z = ctx.saved_tensors
        chunk = ctx.chunk
        num_classes = weight.shape[0]
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_hidden = torch.zeros_like(hidden) if need_hidden else None
        grad_weight = torch.empty_like(weight) if need_weight else None
        grad_bias = torch.empty_like(bias) if (need_bias and bias is not None) else None
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        for start in range(0, num_classes, chunk):
            stop = min(start + chunk, num_classes)
            # d log Z / d logits = softmax; the target logit adds a one-hot at the target.
            if ctx.kept is not None:
                # Out of place: a second backward (retain_graph) finds the kept chunk intact.
                scaled, peak = ctx.kept
                grad_logits = scaled * (torch.exp(peak - log_z) * grad_log_z).unsqueeze(1)
            else:
                logits = _chunk_logits(hidden, weight, bias, start, stop)
                grad_logits = torch.exp_(logits.sub_(log_z.unsqueeze(1))).mul_(grad_log_z.unsqueeze(1))
            inside = (target >= start) & (target < stop)
            grad_logits.index_put_((rows[inside], target[inside] - start), grad_target[inside], accumulate=True)
            if grad_hidden is not None:
                grad_hidden.addmm_(grad_logits, weight[start:stop])
            if grad_weight is not None:
                torch.mm(grad_logits.t(), hidden, out=grad_weight[start:stop])
            if grad_bias is not None:
                torch.sum(grad_logits, dim=0, out=grad_bias[start:stop])
        return grad_hidden, grad_weight, grad_bias, None, None


def chunked_logsumexp(
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    target: Tensor,
    *,
    max_chunk_elements: Optional[int] = None,
) -> tuple[Tensor, Tensor]:
    """Return ``(log Z, s_target)``, each (N,), for logits ``s = hidden @ weight.T + bias``.

    hidden (N, H), weight (V, H), bias (V,) or None, target (N,). Both outputs are
    differentiable; the cross-entropy is ``log_z - s_target``.
    """
    chunk = chunk_size_for(hidden.shape[0], weight.shape[0], max_chunk_elements)
    return _ChunkedLogSumExp.apply(hidden, weight, bias, target, chunk)


def chunked_topk(
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    k: int,
    *,
    max_chunk_elements: Optional[int] = None,
) -> tuple[Tensor, Tensor]:
    """Exact top-k log-probabilities and ids of the linear softmax, (N, k) each, best first.

    One pass over the vocabulary keeps a running top-k of the logits and a running log Z.
    """
    num_rows, num_classes = hidden.shape[0], weight.shape[0]
    chunk = max(k, chunk_size_for(num_rows, num_classes, max_chunk_elements))
    log_z = hidden.new_full((num_rows,), float("-inf"))
    best_values = hidden.new_empty((num_rows, 0))
    best_ids = torch.empty((num_rows, 0), dtype=torch.long, device=hidden.device)
    with torch.no_grad():
        for start in range(0, num_classes, chunk):
            logits = _chunk_logits(hidden, weight, bias, start, min(start + chunk, num_classes))
            log_z = torch.logaddexp(log_z, torch.logsumexp(logits, dim=1))
            values, ids = logits.topk(min(k, logits.shape[1]), dim=1)
            merged_values = torch.cat([best_values, values], dim=1)
            merged_ids = torch.cat([best_ids, ids + start], dim=1)
            best_values, order = merged_values.topk(min(k, merged_values.shape[1]), dim=1)
            best_ids = merged_ids.gather(1, order)
    return best_values - log_z.unsqueeze(1), best_ids
