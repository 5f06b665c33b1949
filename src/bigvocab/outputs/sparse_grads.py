"""Sparse gradients whose rows are distinct and sorted: recognised, and marked coalesced.

Every sampling and tree layer builds the sparse gradient of its (V, H) weight (and of its bias)
from the sorted, distinct ids ``distinct_ids`` gives, so that gradient is coalesced in fact; but
autograd's gradient accumulator stores it without the mark, even when the function that returned
it set the mark (``docs/design/coalesced-sparse-gradients.md``). Unmarked, its users pay for it: ``coalesce``
(``torch.optim.Adagrad``, ``SparseAdam``) sorts and copies the values, 4.6-4.8 ms for 12.4k rows
of 256 at V = 1M, and SGD's update of a (V,) bias took 0.43-0.53 ms against 0.04 ms marked.

:func:`rows_are_distinct` tells such a gradient by one comparison per row; :func:`mark_distinct_rows`
hooks a layer's sparse parameters so that, after each backward, a gradient that passes it is
stored marked. :func:`clip_norm_` clips gradient values by their joint L2 norm, for the trainer's
``clip_norm`` and for the rows a fused optimiser updates in the backward (:mod:`bigvocab.outputs.fused`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor, nn


def rows_are_distinct(grad: Tensor) -> bool:
    """True when the sparse COO ``grad`` is marked coalesced, or has one sparse dimension whose
    indices strictly increase (each row listed once, in order), as a coalesced tensor's do."""
    if grad.is_coalesced():
        return True
    if grad.sparse_dim() != 1:
        return False
    rows = grad._indices()[0]
    return rows.numel() < 2 or bool((rows[1:] > rows[:-1]).all())


def mark_distinct_rows(params: Iterable[nn.Parameter]) -> None:
    """Hook each parameter (once) so that a sparse CPU gradient accumulated into its ``.grad`` whose
    rows are distinct and sorted is stored marked coalesced (the same indices and values). Other
    devices are left alone: the test would make every backward wait for the device."""
    for param in params:
        # The parameter's own hooks say whether it is hooked: a copy that lost them
        # (``copy.deepcopy``, ``torch.save`` of the whole layer) is hooked again on its first loss.
        hooks = param._post_accumulate_grad_hooks or {}
        if param.requires_grad and _mark not in hooks.values():
            param.register_post_accumulate_grad_hook(_mark)


def _mark(param: nn.Parameter) -> None:
    grad = param.grad
    if (
        grad is not None
        and grad.is_sparse
        and grad.device.type == "cpu"
        and not grad.is_coalesced()
        and rows_are_distinct(grad)
    ):
        param.grad = torch.sparse_coo_tensor(
            grad._indices(), grad._values(), grad.shape, check_invariants=False, is_coalesced=True
        )


def clip_norm_(values: Sequence[Tensor], max_norm: float) -> float:
    """Scale ``values`` (dense tensors, or the values of sparse gradients whose rows are distinct) in
    place so that their joint L2 norm is at most ``max_norm``, by ``max_norm / (norm + 1e-6)`` as
    ``torch.nn.utils.clip_grad_norm_`` does; returns the norm before clipping (0.0 for none). The
    norm is taken in float32 or the values' wider dtype, and nothing is scaled when it is not finite."""
    if not values:
        return 0.0
    wide = [value.to(torch.promote_types(value.dtype, torch.float32)) for value in values]
    norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(v).double() for v in wide])))
    if math.isfinite(norm) and norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        for value in values:
            value.mul_(scale)
    return norm
