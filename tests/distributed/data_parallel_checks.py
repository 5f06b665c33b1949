"""What each rank computes in the data-parallel tests: P ranks stepping on their slices of a
global batch, gradients averaged, against one process stepping on the whole batch."""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

import bigvocab
from bigvocab.distributed.data_parallel import average_gradients, broadcast_module, shard_batches

V, H, VOCAB_IN, ROWS_PER_RANK, STEPS = 11, 5, 9, 4, 4
COUNTS = [100.0 / (i + 1) for i in range(V)]


class Model(nn.Module):
    """A sparse embedding (sparse gradients) and a linear map into any output layer."""

    def __init__(self, output: nn.Module) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB_IN, 4, sparse=True)
        self.linear = nn.Linear(4, H)
        self.output = output

    def loss(self, ids: Tensor, target: Tensor) -> Tensor:
        return self.output.loss(torch.tanh(self.linear(self.embedding(ids))), target)


def relative_error(ours: Tensor, reference: Tensor) -> float:
    ours, reference = ours.detach().to_dense(), reference.detach().to_dense()
    return float((ours - reference).abs().max() / reference.abs().max().clamp_min(1e-300))


def run(model: Model, ids: Tensor, target: Tensor, group: Any = None) -> list[float]:
    torch.manual_seed(3)  # the same draws on every rank and in the one-process run
    optimiser = torch.optim.SGD(model.parameters(), lr=0.3)
    losses = []
    for _ in range(STEPS):
        optimiser.zero_grad()
        loss = model.loss(ids, target)
        loss.backward()
        if group is not None:
            average_gradients(model.parameters(), group)
            loss = loss.detach().clone()
            dist.all_reduce(loss, group=group)
            loss /= dist.get_world_size(group)
        optimiser.step()
        losses.append(float(loss.detach()))
    return losses


def check_equivalence(group: Any, name: str, options: dict) -> dict[str, float]:
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    torch.manual_seed(rank)  # different initial weights per rank: broadcast_module must fix that
    local = Model(bigvocab.create_output(name, H, V, counts=COUNTS, **options)).double()
    broadcast_module(local, group)
    single = copy.deepcopy(local)
    generator = torch.Generator().manual_seed(4)
    ids = torch.randint(0, VOCAB_IN, (world * ROWS_PER_RANK,), generator=generator)
    target = torch.randint(0, V, (world * ROWS_PER_RANK,), generator=generator)
    mine = slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)
    ref_losses = torch.tensor(run(single, ids, target))
    losses = torch.tensor(run(local, ids[mine], target[mine], group))
    reference = single.state_dict()
    return {
        "losses": relative_error(losses, ref_losses),
        "loss_moved": float((ref_losses[0] - ref_losses[-1]).abs()),
        "weights": max(relative_error(value, reference[key]) for key, value in local.state_dict().items()),
    }


def check_uneven_gradients(group: Any) -> dict[str, float]:
    """A parameter only rank 0 uses, dense and sparse: every rank ends with the mean gradient."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    dense = nn.Parameter(torch.ones(3, dtype=torch.float64))
    sparse = nn.Embedding(6, 2, sparse=True).double()
    if rank == 0:
        (dense * 2.0).sum().backward()
        sparse(torch.tensor([1, 4])).sum().backward()
    else:
        sparse(torch.tensor([rank % 6])).sum().backward()  # every rank touches some row
    average_gradients([dense, *sparse.parameters()], group)
    want_sparse = torch.zeros(6, 2, dtype=torch.float64)
    want_sparse[[1, 4]] += 1.0
    for other in range(1, world):
        want_sparse[other % 6] += 1.0
    return {
        "dense": relative_error(dense.grad, torch.full((3,), 2.0 / world, dtype=torch.float64)),
        "sparse": relative_error(sparse.weight.grad, want_sparse / world),
        "sparse_rows": float(sparse.weight.grad.coalesce().indices().shape[1]),
    }


def all_checks(group: Any) -> dict[str, Any]:
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    results: dict[str, Any] = {}
    for check, name, options in (("full", "full", {}), ("sampled", "sampled", {"num_samples": 4})):
        for key, value in check_equivalence(group, name, options).items():
            results[f"{check}/{key}"] = value
    for key, value in check_uneven_gradients(group).items():
        results[f"uneven/{key}"] = value
    results["shard_batches"] = list(shard_batches(range(2 * world + 1), rank, world))
    return results
