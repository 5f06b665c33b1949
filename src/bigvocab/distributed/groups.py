"""The process group of a vocabulary-parallel layer and the collectives its maths is made of.

Library code never reaches for torch.distributed's implicit default group: a :class:`VocabShard`
carries the group it was given (``torch.distributed.group.WORLD`` or any sub-group), and every
collective here names it. The backend (gloo, NCCL) and the device are the caller's: the
collectives work on the tensors' own device.

**Replicated and sharded tensors.** The hidden states, the losses and every output of the
vocabulary-parallel functions are *replicated*: equal on every rank of the group, and so are their
gradients. Weight rows are *sharded*: each rank holds its own. Three autograd-aware collectives
move between the two (the scheme of Megatron-LM's tensor-parallel "regions", Shoeybi et al. 2019):

* :func:`copy_to_shards` -- identity forward; backward sums the ranks' partial gradients of a
  replicated input (each rank's rows contribute a part of d loss / d hidden);
* :func:`sum_over_shards` -- forward sums per-rank partial results into a replicated one
  (scores of candidates, zero where another rank owns the class); backward passes the replicated
  gradient through unchanged;
* :func:`logsumexp_over_shards` -- log Σ_r exp(a_r) of per-rank log-normalisers, from an
  all-reduce of the maximum and one of the sum of exponentials;

and :func:`gather_shards` concatenates per-rank blocks along the class dimension.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, overload

import torch
import torch.distributed as dist
from torch import Tensor

from bigvocab.distributed.partition import VocabPartition
from bigvocab.errors import ConfigError


@dataclass(frozen=True)
class VocabShard:
    """This rank's part of a vocabulary-parallel layer: the group, the partition and the rank.

    Build it with :func:`vocab_shard`, which reads the rank and world size from the group.
    """

    group: Any
    partition: VocabPartition
    rank: int

    @property
    def start(self) -> int:
        return self.partition.range(self.rank)[0]

    @property
    def stop(self) -> int:
        return self.partition.range(self.rank)[1]

    @property
    def size(self) -> int:
        return self.stop - self.start


def group_position(group: Any) -> tuple[int, int]:
    """(world size, rank) of this process in ``group``, a process group it belongs to (checked)."""
    if group is None:
        raise ConfigError(
            "group must be a torch.distributed process group (e.g. torch.distributed.group.WORLD); "
            "bigvocab never uses the implicit default group"
        )
    if not dist.is_available() or not dist.is_initialized():
        raise ConfigError("vocabulary-parallel layers need torch.distributed.init_process_group to have been called")
    world_size, rank = dist.get_world_size(group), dist.get_rank(group)
    if rank < 0:
        raise ConfigError("this process is not a member of the process group it was given")
    return world_size, rank


def vocab_shard(num_classes: int, group: Any, partition: VocabPartition | None = None) -> VocabShard:
    """This rank's shard of ``num_classes`` classes over ``group`` (rows balanced by default)."""
    world_size, rank = group_position(group)
    if partition is None:
        partition = VocabPartition.even(num_classes, world_size)
    if partition.num_classes != num_classes:
        raise ConfigError(f"the partition covers {partition.num_classes} classes but the layer has {num_classes}")
    if partition.world_size != world_size:
        raise ConfigError(f"the partition has {partition.world_size} ranges but the group has {world_size} ranks")
    return VocabShard(group, partition, rank)


def all_reduce(tensor: Tensor, group: Any, op: Any = dist.ReduceOp.SUM) -> Tensor:
    """A reduced copy of ``tensor`` (the input is left alone)."""
    out = tensor.detach().clone(memory_format=torch.contiguous_format)
    dist.all_reduce(out, op=op, group=group)
    return out


def all_gather_cat(tensor: Tensor, group: Any, dim: int) -> Tensor:
    """The ranks' tensors concatenated along ``dim``; they must have equal shapes."""
    tensor = tensor.contiguous()
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, tensor, group=group)
    return torch.cat(parts, dim=dim)


def gather_blocks(
    tensor: Tensor, sizes: list[int], group: Any, rank: int, dim: int, *, dst: int | None = None
) -> list[Tensor] | None:
    """Every rank's block, rank r's of size ``sizes[r]`` along ``dim``: on every rank, or with
    ``dst`` (a rank of ``group``) on that rank only (None elsewhere), so only one rank ever holds
    them all. Blocks are padded to the largest because collectives need equal shapes."""
    padded_size = max(sizes)
    tensor = tensor.contiguous()
    if tensor.shape[dim] < padded_size:
        pad_shape = list(tensor.shape)
        pad_shape[dim] = padded_size - tensor.shape[dim]
        tensor = torch.cat([tensor, tensor.new_zeros(pad_shape)], dim=dim)
    if dst is None:
        parts: list[Tensor] | None = [torch.empty_like(tensor) for _ in sizes]
        dist.all_gather(parts, tensor, group=group)
    else:
        parts = [torch.empty_like(tensor) for _ in sizes] if rank == dst else None
        dist.gather(tensor, parts, dst=dist.get_global_rank(group, dst), group=group)
    if parts is None:
        return None
    return [part.narrow(dim, 0, size) for part, size in zip(parts, sizes)]


@overload
def gather_uneven(tensor: Tensor, shard: VocabShard, dim: int) -> Tensor: ...
@overload
def gather_uneven(tensor: Tensor, shard: VocabShard, dim: int, *, dst: int | None) -> Tensor | None: ...
def gather_uneven(tensor: Tensor, shard: VocabShard, dim: int, *, dst: int | None = None) -> Tensor | None:
    """Per-rank blocks whose size along ``dim`` is the rank's class count, concatenated in rank
    order into the full vocabulary along ``dim`` (see :func:`gather_blocks` for ``dst``)."""
    blocks = gather_blocks(tensor, shard.partition.sizes, shard.group, shard.rank, dim, dst=dst)
    return None if blocks is None else torch.cat(blocks, dim=dim)


class _CopyToShards(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor: Tensor, group: Any) -> Tensor:
        ctx.group = group
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return all_reduce(grad, ctx.group), None


class _SumOverShards(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor: Tensor, group: Any) -> Tensor:
        return all_reduce(tensor, group)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return grad, None


class _LogSumExpOverShards(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local: Tensor, group: Any) -> Tensor:
        # Shifting by the global maximum keeps every exp(.) <= 1 (no overflow), and the rank
        # holding the maximum contributes exp(0) = 1 (no total underflow).
        shift = all_reduce(local, group, dist.ReduceOp.MAX)
        total = all_reduce(torch.exp(local - shift), group)
        result = shift + torch.log(total)
        ctx.save_for_backward(local, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        local, result = ctx.saved_tensors
        # d/d a_r log Σ exp(a) = exp(a_r - log Σ exp(a)): this rank's share of the normaliser.
        return grad * torch.exp(local - result), None


class _GatherShards(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local: Tensor, shard: VocabShard) -> Tensor:
        ctx.shard = shard
        return gather_uneven(local, shard, dim=-1)

    @staticmethod
    def backward(ctx, grad: Tensor):
        # The gathered output is replicated, so its gradient is too: each rank keeps its columns.
        shard = ctx.shard
        return grad[..., shard.start : shard.stop], None


def copy_to_shards(tensor: Tensor, group: Any) -> Tensor:
    """A replicated input used by per-rank computations: identity forward, gradient summed over
    the group in backward."""
    return _CopyToShards.apply(tensor, group)


def sum_over_shards(tensor: Tensor, group: Any) -> Tensor:
    """Σ over ranks of per-rank partial results, replicated; the gradient passes through as is."""
    return _SumOverShards.apply(tensor, group)


def logsumexp_over_shards(local: Tensor, group: Any) -> Tensor:
    """log Σ_r exp(local_r), elementwise, differentiable: the log-normaliser over the whole
    vocabulary from each rank's log-normaliser over its own classes."""
    return _LogSumExpOverShards.apply(local, group)


def gather_shards(local: Tensor, shard: VocabShard) -> Tensor:
    """(..., rows of this rank) -> (..., V) in class order, replicated and differentiable."""
    return _GatherShards.apply(local, shard)
