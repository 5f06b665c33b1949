"""Data parallelism: each rank steps on its own batches, gradients averaged over the group.

PyTorch's DistributedDataParallel reduces gradients from hooks that its ``forward`` arms, and
reduces sparse gradients only on gloo. bigvocab's models train through ``model.loss(batch)`` and
many of its layers (sampled, trees, sparse embeddings) give *sparse* gradients, which NCCL cannot
all-reduce. So the averaging is explicit, after ``backward`` and before ``optimizer.step()``:

* dense gradients: one all-reduce of one flat buffer per (dtype, device);
* sparse gradients: the ranks' (indices, values) are all-gathered (padded to the largest, then cut
  back) and summed into one coalesced sparse gradient, so a sparse optimiser still touches only
  the rows some rank touched, on every backend;
* a parameter whose gradient is None on some ranks and not on others gets a zero one there (one
  small all-reduce of flags decides), so no rank ever waits on a collective the others skip.

With the loss a mean over equal local batches, the average is the gradient of the mean over the
global batch: P ranks with N rows each step as one process with P N rows. Seeding every rank alike
makes the shared draws of sampling layers equal too, so that equality holds for them exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import Tensor, nn

from bigvocab.distributed.groups import all_gather_cat
from bigvocab.errors import ConfigError

T = TypeVar("T")

_NONE, _DENSE, _SPARSE = 0, 1, 2


def shard_batches(batches: Iterable[T], rank: int, world_size: int) -> Iterator[T]:
    """Batch ``i`` goes to rank ``i % world_size``; a tail shorter than ``world_size`` batches is
    dropped so that every rank takes the same number of steps (each step is a collective)."""
    if not 0 <= rank < world_size:
        raise ConfigError(f"rank {rank} is outside a world of {world_size} processes")
    pending: list[T] = []
    for batch in batches:
        pending.append(batch)
        if len(pending) == world_size:
            yield pending[rank]
            pending = []


def broadcast_module(module: nn.Module, group: Any, src: int = 0) -> None:
    """Copy rank ``src``'s parameters and buffers to every rank (``src`` a rank of ``group``)."""
    source = dist.get_global_rank(group, src)
    for tensor in list(module.parameters()) + list(module.buffers()):
        dist.broadcast(tensor.data, src=source, group=group)


def _kinds(params: list[nn.Parameter], group: Any) -> list[int]:
    """Per parameter: the kind of gradient any rank has (none, dense, sparse)."""
    device = params[0].device
    local = [(_SPARSE if p.grad.is_sparse else _DENSE) if p.grad is not None else _NONE for p in params]
    flags = torch.tensor(local, dtype=torch.int32, device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=group)
    return flags.tolist()


def _average_sparse(grad: Tensor, group: Any, world_size: int) -> Tensor:
    grad = grad.coalesce()
    indices, values = grad.indices(), grad.values()
    counts = all_gather_cat(torch.tensor([indices.shape[1]], device=values.device), group, dim=0).tolist()
    padded = max(counts)
    pad = padded - indices.shape[1]
    if pad:
        indices = torch.cat([indices, indices.new_zeros(indices.shape[0], pad)], dim=1)
        values = torch.cat([values, values.new_zeros(pad, *values.shape[1:])], dim=0)
    all_indices = all_gather_cat(indices, group, dim=1)
    all_values = all_gather_cat(values, group, dim=0)
    keep = torch.cat(
        [torch.arange(rank * padded, rank * padded + n, device=values.device) for rank, n in enumerate(counts)]
    )
    # The indices come from the ranks' coalesced gradients of this shape, so they are in range.
    return torch.sparse_coo_tensor(
        all_indices.index_select(1, keep),
        all_values.index_select(0, keep) / world_size,
        grad.shape,
        check_invariants=False,
    ).coalesce()


def average_gradients(parameters: Iterable[nn.Parameter], group: Any) -> None:
    """Replace every gradient by its mean over the ranks of ``group``; call after ``backward``."""
    params = [p for p in parameters if p.requires_grad]
    if not params:
        return
    world_size = dist.get_world_size(group)
    dense: dict[tuple[torch.dtype, torch.device], list[Tensor]] = {}
    for param, kind in zip(params, _kinds(params, group)):
        if kind == _SPARSE:
            if param.grad is None:
                param.grad = torch.sparse_coo_tensor(
                    torch.empty((1, 0), dtype=torch.long, device=param.device),
                    param.new_empty((0, *param.shape[1:])),
                    param.shape,
                )
            param.grad = _average_sparse(param.grad, group, world_size)
        elif kind == _DENSE:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            dense.setdefault((param.grad.dtype, param.grad.device), []).append(param.grad)
    for grads in dense.values():
        flat = torch.cat([grad.reshape(-1) for grad in grads])
        dist.all_reduce(flat, group=group)
        flat /= world_size
        offset = 0
        for grad in grads:
            size = grad.numel()
            grad.copy_(flat[offset : offset + size].view_as(grad))
            offset += size
