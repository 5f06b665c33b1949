"""Checkpoints of vocabulary-parallel models: shards <-> one-process state dicts.

A model whose output layer scores with a :class:`~bigvocab.distributed.scorer.VocabParallelScorer` has a
state dict per rank: the replicated entries, and this rank's rows of the split parameters plus the
partition they came from (in the layer's ``_extra_state``, so a shard refuses to load into another
layout). :func:`gather_state_dict` assembles the one-process state dict -- what an ordinary
process loads for evaluation or export -- and :func:`shard_state_dict` cuts a one-process state
dict back into this rank's part, so a run can resume vocabulary-parallel from it with any number
of ranks. :func:`gather_optimizer_state` and :func:`shard_optimizer_state` do the same for the
per-row state of an optimiser (momentum, Adam's moments, Adagrad's sums).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

import torch
from torch import Tensor, nn

from bigvocab.distributed.groups import VocabShard, gather_uneven
from bigvocab.distributed.scorer import VocabParallelScorer
from bigvocab.errors import CheckpointError

EXTRA_STATE = "_extra_state"


def _sharded_scorers(module: nn.Module) -> list[tuple[str, VocabParallelScorer]]:
    """(state-dict prefix, scorer) of every vocabulary-parallel scorer inside ``module``."""
    return [
        (f"{name}." if name else "", sub)
        for name, sub in module.named_modules()
        if isinstance(sub, VocabParallelScorer)
    ]


def gather_state_dict(module: nn.Module, *, dst: Optional[int] = 0) -> Optional[dict[str, Tensor]]:
    """The one-process state dict of ``module``, on rank ``dst`` of each layer's group (None on the
    other ranks), or on every rank with ``dst=None``. Every rank must call it (it communicates)."""
    state = module.state_dict()
    complete = True
    for prefix, scorer in _sharded_scorers(module):
        for name in scorer.sharded_parameters:
            key = prefix + name
            if key in state:
                full = gather_uneven(state[key], scorer.shard, dim=0, dst=dst)
                complete = complete and full is not None
                state[key] = full
        state.pop(prefix + EXTRA_STATE, None)
    return state if complete else None


def shard_state_dict(module: nn.Module, full_state: dict[str, Tensor]) -> dict[str, Tensor]:
    """This rank's state dict for ``module`` cut from a one-process ``full_state``; load it with
    ``module.load_state_dict``. Needs no communication: every rank reads the same full state."""
    state = dict(full_state)
    for prefix, scorer in _sharded_scorers(module):
        shard = scorer.shard
        for name in scorer.sharded_parameters:
            key = prefix + name
            if key not in state:
                continue
            rows = state[key]
            if rows.shape[0] != shard.partition.num_classes:
                raise CheckpointError(
                    f"{key} has {rows.shape[0]} rows but the vocabulary-parallel scorer has "
                    f"{shard.partition.num_classes} classes"
                )
            state[key] = rows[shard.start : shard.stop].clone()
        state[prefix + EXTRA_STATE] = scorer.get_extra_state()
    return state


def _sharded_parameters(module: nn.Module) -> dict[int, VocabShard]:
    """id(parameter) -> its shard, for every row-split parameter inside ``module``."""
    return {
        id(getattr(scorer, name)): scorer.shard
        for _, scorer in _sharded_scorers(module)
        for name in scorer.sharded_parameters
        if getattr(scorer, name) is not None
    }


def _optimizer_rows(
    optimizer: torch.optim.Optimizer, module: nn.Module
) -> Iterator[tuple[int, VocabShard]]:
    """(index in the optimiser's state dict, shard) of each row-split parameter it steps."""
    sharded = _sharded_parameters(module)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for index, param in enumerate(params):
        if id(param) in sharded:
            yield index, sharded[id(param)]


def gather_optimizer_state(
    optimizer: torch.optim.Optimizer, module: nn.Module, *, dst: Optional[int] = 0
) -> Optional[dict[str, Any]]:
    """The one-process state dict of ``optimizer`` stepping ``module``'s parameters: the per-row
    state of the split parameters (momentum, Adam's moments, Adagrad's sums) gathered like the
    rows themselves; on rank ``dst`` only (None elsewhere), or everywhere with ``dst=None``."""
    state = optimizer.state_dict()
    complete = True
    for index, shard in _optimizer_rows(optimizer, module):
        per_param = dict(state["state"].get(index, {}))
        for name, value in per_param.items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == shard.size:
                per_param[name] = gather_uneven(value, shard, dim=0, dst=dst)
                complete = complete and per_param[name] is not None
        state["state"][index] = per_param
    return state if complete else None


def shard_optimizer_state(
    optimizer: torch.optim.Optimizer, module: nn.Module, full_state: dict[str, Any]
) -> dict[str, Any]:
    """This rank's optimiser state cut from a one-process ``full_state``; load it with
    ``optimizer.load_state_dict``."""
    state = {**full_state, "state": dict(full_state["state"])}
    for index, shard in _optimizer_rows(optimizer, module):
        per_param = dict(state["state"].get(index, {}))
        for name, value in per_param.items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == shard.partition.num_classes:
                per_param[name] = value[shard.start : shard.stop].clone()
        if per_param:
            state["state"][index] = per_param
    return state
