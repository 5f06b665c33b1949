"""One rank's part in a distributed training run: what the trainer asks of it at each step.

Two layouts, both under ``torchrun`` (or any launcher that sets ``RANK``/``WORLD_SIZE``):

* **data parallel** (the default): every rank holds the whole model and steps on every P-th batch;
  gradients (dense and sparse) are averaged over the ranks after ``backward``
  (:func:`~bigvocab.distributed.data_parallel.average_gradients`), so P ranks with batches of N
  step as one process with batches of P N. A model that carries state from one batch to the next
  (the LSTM) restarts it at every batch, because consecutive segments go to different ranks:
  train it vocabulary parallel or in one process.
* **vocabulary parallel** (``vocab_parallel=True``): every rank sees every batch, the encoder is
  replicated and the output layer splits its rows itself
  (:meth:`~bigvocab.outputs.base.OutputLayer.shard_vocabulary`);
  the collectives are inside the layer, so the step needs nothing more.

Data parallel runs may average models instead of gradients (:mod:`bigvocab.distributed.averaging`:
local SGD, elastic averaging SGD): each rank then steps with its own optimiser and the ranks meet
every few steps.

In every layout every rank is seeded alike, rank 0 alone writes files (checkpoints, metrics,
progress), and checkpoints hold the one-process state (model and optimiser; for model averaging
the ranks' consensus, with each rank's own model and optimiser kept beside it so that the run
resumes exactly), so ``bigvocab eval`` reads them in one ordinary process and a run can resume
under any number of ranks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import nn

from bigvocab.distributed.averaging import ElasticAveraging, LocalSGD, consensus_state
from bigvocab.distributed.checkpoint import (
    gather_optimizer_state,
    gather_state_dict,
    shard_optimizer_state,
    shard_state_dict,
)
from bigvocab.distributed.data_parallel import average_gradients, broadcast_module, shard_batches
from bigvocab.errors import ConfigError

T = TypeVar("T")


@dataclass
class DistributedTraining:
    """This rank of ``group`` in a data-parallel or vocabulary-parallel run."""

    group: Any
    vocab_parallel: bool = False
    averaging: LocalSGD | ElasticAveraging | None = None

    def average_models(self, method: str, period: int, model: nn.Module, alpha: float | None = None) -> None:
        """Average models, not gradients: ``"local-sgd"`` or ``"easgd"`` every ``period`` steps
        (after :meth:`prepare`, so every rank starts from the same weights)."""
        if self.vocab_parallel:
            raise ConfigError(f"{method} averages whole models; it cannot run with a vocabulary-parallel output layer")
        if method == "local-sgd":
            self.averaging = LocalSGD(period, self.group)
        elif method == "easgd":
            self.averaging = ElasticAveraging(period, model, alpha, self.group)
        else:
            raise ConfigError(f"unknown model averaging {method!r} (valid: local-sgd, easgd)")

    @contextlib.contextmanager
    def consensus_weights(self, model: nn.Module) -> Iterator[None]:
        """Within: ``model`` holds the ranks' consensus (model averaging), then its own weights again."""
        assert self.averaging is not None
        own = [p.detach().clone() for p in model.parameters()]
        values = self.averaging.consensus(model)
        with torch.no_grad():
            for param, value in zip(model.parameters(), values):
                param.copy_(value)
        try:
            yield
        finally:
            with torch.no_grad():
                for param, saved in zip(model.parameters(), own):
                    param.copy_(saved)

    def after_step(self, model: nn.Module, step: int) -> None:
        """Model averaging's communication, on the steps it is due."""
        if self.averaging is not None:
            self.averaging.after_step(model, step)

    @classmethod
    def from_environment(cls, *, vocab_parallel: bool, device: torch.device) -> DistributedTraining | None:
        """Join the run that ``torchrun`` describes in the environment (NCCL on CUDA, gloo on CPU);
        None in an ordinary process, where ``vocab_parallel`` is refused."""
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            if vocab_parallel:
                raise ConfigError(
                    "--vocab-parallel splits the output layer over the processes of a torchrun launch "
                    "(e.g. torchrun --standalone --nproc_per_node 2 -m bigvocab.cli train ...); this is one process"
                )
            return None
        if device.type == "cuda" and device.index is None and "LOCAL_RANK" in os.environ:
            # each process its own GPU: "cuda" then names this rank's card wherever it is used
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        if not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        return cls(dist.group.WORLD, vocab_parallel=vocab_parallel)

    @property
    def rank(self) -> int:
        return dist.get_rank(self.group)

    @property
    def world_size(self) -> int:
        return dist.get_world_size(self.group)

    @property
    def writes(self) -> bool:
        """Rank 0 writes the run's files and shows its progress."""
        return self.rank == 0

    def prepare(self, model: nn.Module) -> nn.Module:
        """Start every rank from rank 0's weights, then (vocabulary parallel) keep this rank's rows
        of the output layer; before the optimisers are built."""
        output = getattr(model, "output", None)
        if self.vocab_parallel and output is None:
            raise ConfigError(f"{type(model).__name__} has no output layer to split over the vocabulary")
        broadcast_module(model, self.group)
        if self.vocab_parallel and output is not None:
            model.output = output.shard_vocabulary(self.group)
        return model

    def batches(self, batches: Iterable[T]) -> Iterator[T]:
        """This rank's batches: all of them (vocabulary parallel) or every P-th (data parallel)."""
        if self.vocab_parallel:
            return iter(batches)
        return shard_batches(batches, self.rank, self.world_size)

    def num_batches(self, total: int) -> int:
        """How many of an epoch's ``total`` batches this rank steps on (see :meth:`batches`)."""
        return total if self.vocab_parallel else total // self.world_size

    def reduce_gradients(self, model: nn.Module) -> None:
        if not self.vocab_parallel and self.averaging is None:
            average_gradients(model.parameters(), self.group)

    def mean(self, value: float, device: torch.device) -> float:
        """The mean over ranks of a per-rank number (data parallel: the losses of their batches)."""
        if self.vocab_parallel:
            return value
        total = torch.tensor([value], dtype=torch.float64, device=device)
        dist.all_reduce(total, group=self.group)
        return float(total) / self.world_size

    def max(self, value: int, device: torch.device) -> int:
        """The largest over ranks of a per-rank integer (the trainer's stop signal, 0 for none)."""
        total = torch.tensor([value], dtype=torch.int64, device=device)
        dist.all_reduce(total, op=dist.ReduceOp.MAX, group=self.group)
        return int(total)

    def targets_per_step(self, local: int) -> int:
        return local if self.vocab_parallel else local * self.world_size

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def leave(self) -> None:
        """End this rank's part in the run: wait for every rank, then destroy the process group.

        A rank that tears gloo down while a peer still sends to it (rank 0 finishing its last
        file while another already exits) made the peer abort with SIGABRT ("terminate called
        without an active exception"); after the barrier no message is in flight. Call it once,
        on every rank, when the run has ended normally.
        """
        self.barrier()
        dist.destroy_process_group()

    def model_state(self, model: nn.Module) -> dict[str, Any] | None:
        """The one-process state dict, on the writing rank (None elsewhere); every rank calls it."""
        if self.vocab_parallel:
            return gather_state_dict(model, dst=0)
        if self.averaging is not None:
            values = self.averaging.consensus(model)  # local SGD: a collective
            return consensus_state(model, values) if self.writes else None
        return model.state_dict() if self.writes else None

    def replica_states(self, model: nn.Module, optimizers: list[torch.optim.Optimizer]) -> dict[str, Any] | None:
        """Under model averaging: every rank's own model and optimisers, and the averaging's state,
        gathered on the writing rank (None elsewhere, and without model averaging)."""
        if self.averaging is None:
            return None
        own = {"model": model.state_dict(), "optimizers": [o.state_dict() for o in optimizers]}
        gathered: list[Any] | None = [None] * self.world_size if self.writes else None
        dist.gather_object(own, gathered, dst=0, group=self.group)
        return {"ranks": gathered, "averaging": self.averaging.state_dict()} if self.writes else None

    def load_replica(
        self, model: nn.Module, optimizers: list[torch.optim.Optimizer], replicas: dict[str, Any] | None
    ) -> bool:
        """This rank's own model and optimisers from :meth:`replica_states`' record; False (every
        rank then goes on from the consensus) when the run had another number of ranks."""
        if self.averaging is None:
            return False
        if replicas is None or len(replicas["ranks"]) != self.world_size:
            if isinstance(self.averaging, ElasticAveraging):  # the centre restarts at the consensus
                self.averaging.centre = [p.detach().clone() for p in model.parameters()]
            return False
        own = replicas["ranks"][self.rank]
        model.load_state_dict(own["model"])
        for optimizer, state in zip(optimizers, own["optimizers"]):
            optimizer.load_state_dict(state)
        self.averaging.load_state_dict(replicas["averaging"])
        return True

    def optimizer_state(self, optimizer: torch.optim.Optimizer, model: nn.Module) -> dict[str, Any] | None:
        if self.vocab_parallel:
            return gather_optimizer_state(optimizer, model, dst=0)
        return optimizer.state_dict() if self.writes else None

    def load_model_state(self, model: nn.Module, state: dict[str, Any]) -> None:
        model.load_state_dict(shard_state_dict(model, state) if self.vocab_parallel else state)

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, model: nn.Module, state: dict[str, Any]) -> None:
        optimizer.load_state_dict(shard_optimizer_state(optimizer, model, state) if self.vocab_parallel else state)
