"""Adagrad on the touched rows, in the backward, as ``torch.optim.Adagrad`` steps a sparse gradient."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from bigvocab.outputs.fused.gradients import RowGradient
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.registry import ROW_OPTIMIZERS


@ROW_OPTIMIZERS.register("adagrad")
class FusedAdagrad(FusedRowOptimizer):
    """Adagrad (Duchi, Hazan & Singer 2011) of the rows a step touched: a sum of squared gradients
    per weight, the state (``step``, ``sum`` (V, ...)) named and typed as torch's, so either
    optimiser's checkpoint loads into the other.

    Args:
        params: the sparse parameters (V, ...).
        lr: the learning rate.
        lr_decay: the rate at step t is lr / (1 + (t - 1) lr_decay).
        eps: added to the square root of the sum.
        initial_accumulator_value: the sums' starting value.
        max_norm: clip each parameter's step gradient to this L2 norm (None: no clipping).
    """

    def __init__(
        self,
        params: Iterable[Any],
        *,
        lr: float,
        lr_decay: float = 0.0,
        eps: float = 1e-10,
        initial_accumulator_value: float = 0.0,
        max_norm: float | None = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "initial_accumulator_value": initial_accumulator_value,
            "max_norm": max_norm,
        }
        super().__init__(params, defaults)

    def state_passes(self) -> float:
        """The sums, read and written: as large as the rows."""
        return 2.0

    def init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = torch.tensor(0.0)
        state["sum"] = torch.full_like(param, group["initial_accumulator_value"])

    def apply_rows(self, param: Tensor, state: dict[str, Any], group: dict[str, Any], gradient: RowGradient) -> None:
        state["step"] += 1
        rate = group["lr"] / (1 + (float(state["step"]) - 1) * group["lr_decay"])
        gradient.adagrad(param, state["sum"], rate, group["eps"])
