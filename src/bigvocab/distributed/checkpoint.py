"""Checkpoints of vocabulary-parallel models: shards <-> one-process state dicts.

A vocabulary-parallel model has a state dict per rank: the replicated entries, and this rank's
rows of the row-split parameters plus the layout they came from (in the sharded module's
``_extra_state``, so a shard refuses to load into another layout). Each sharded module declares
the :class:`~bigvocab.distributed.rows.RowLayout` of its parameters
(:class:`~bigvocab.distributed.rows.RowSharded`), so this code names no layer:
:func:`gather_state_dict` assembles the one-process state dict -- what an ordinary process loads
for evaluation or export -- and :func:`shard_state_dict` cuts a one-process state dict back into
this rank's part, so a run can resume vocabulary-parallel from it with any number of ranks.
:func:`gather_optimizer_state` and :func:`shard_optimizer_state` do the same for the per-row state
of an optimiser (momentum, Adam's moments, Adagrad's sums).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn

from bigvocab.distributed.rows import RowLayout, RowSharded

EXTRA_STATE = "_extra_state"


def _sharded_modules(module: nn.Module) -> list[tuple[str, RowSharded]]:
    """(state-dict prefix, module) of every module holding row-split parameters inside ``module``."""
    return [(f"{name}." if name else "", sub) for name, sub in module.named_modules() if isinstance(sub, RowSharded)]


def _layouts(module: nn.Module) -> Iterator[tuple[str, RowLayout]]:
    """(state-dict key, layout) of every row-split parameter inside ``module``."""
    for prefix, sharded in _sharded_modules(module):
        for name, layout in sharded.sharded_rows().items():
            yield prefix + name, layout


def gather_state_dict(module: nn.Module, *, dst: int | None = 0) -> dict[str, Tensor] | None:
    """The one-process state dict of ``module``, on rank ``dst`` of each layer's group (None on the
    other ranks), or on every rank with ``dst=None``. Every rank must call it (it communicates)."""
    state = module.state_dict()
    complete = True
    for key, layout in _layouts(module):
        full = layout.gather(state[key], dst=dst)
        complete = complete and full is not None
        state[key] = full
    for prefix, _ in _sharded_modules(module):
        state.pop(prefix + EXTRA_STATE, None)
    return state if complete else None


def shard_state_dict(module: nn.Module, full_state: dict[str, Tensor]) -> dict[str, Any]:
    """This rank's state dict for ``module`` cut from a one-process ``full_state``; load it with
    ``module.load_state_dict``. Needs no communication: every rank reads the same full state."""
    state: dict[str, Any] = dict(full_state)
    for key, layout in _layouts(module):
        if key in state:
            state[key] = layout.cut(state[key], key=key)
    for prefix, sharded in _sharded_modules(module):
        state[prefix + EXTRA_STATE] = sharded.get_extra_state()
    return state


def _optimizer_rows(optimizer: torch.optim.Optimizer, module: nn.Module) -> Iterator[tuple[int, RowLayout]]:
    """(index in the optimiser's state dict, layout) of each row-split parameter it steps."""
    params = dict(module.named_parameters())
    sharded = {id(params[key]): layout for key, layout in _layouts(module) if key in params}
    steps = [p for group in optimizer.param_groups for p in group["params"]]
    for index, param in enumerate(steps):
        if id(param) in sharded:
            yield index, sharded[id(param)]


def gather_optimizer_state(
    optimizer: torch.optim.Optimizer, module: nn.Module, *, dst: int | None = 0
) -> dict[str, Any] | None:
    """The one-process state dict of ``optimizer`` stepping ``module``'s parameters: the per-row
    state of the split parameters (momentum, Adam's moments, Adagrad's sums) gathered like the
    rows themselves; on rank ``dst`` only (None elsewhere), or everywhere with ``dst=None``."""
    state = optimizer.state_dict()
    complete = True
    for index, layout in _optimizer_rows(optimizer, module):
        per_param = dict(state["state"].get(index, {}))
        for name, value in per_param.items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == layout.local_size:
                per_param[name] = layout.gather(value, dst=dst)
                complete = complete and per_param[name] is not None
        state["state"][index] = per_param
    return state if complete else None


def shard_optimizer_state(
    optimizer: torch.optim.Optimizer, module: nn.Module, full_state: dict[str, Any]
) -> dict[str, Any]:
    """This rank's optimiser state cut from a one-process ``full_state``; load it with
    ``optimizer.load_state_dict``."""
    state = {**full_state, "state": dict(full_state["state"])}
    for index, layout in _optimizer_rows(optimizer, module):
        per_param = dict(state["state"].get(index, {}))
        for name, value in per_param.items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == layout.total:
                per_param[name] = layout.cut(value, key=f"optimiser state {name}")
        if per_param:
            state["state"][index] = per_param
    return state
