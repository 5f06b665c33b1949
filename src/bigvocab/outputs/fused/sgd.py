"""Stochastic gradient descent on the touched rows, in the backward: w[r] -= lr * g_r, as
``torch.optim.SGD`` (no momentum, no weight decay) steps a sparse gradient."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch import Tensor

from bigvocab.outputs.fused.gradients import RowGradient
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.registry import ROW_OPTIMIZERS


@ROW_OPTIMIZERS.register("sgd")
class FusedSGD(FusedRowOptimizer):
    """Plain SGD (Robbins & Monro 1951) of the rows a step touched; no state.

    Args:
        params: the sparse parameters (V, ...).
        lr: the learning rate.
        max_norm: clip each parameter's step gradient to this L2 norm (None: no clipping).
    """

    def __init__(self, params: Iterable[Any], *, lr: float, max_norm: float | None = None) -> None:
        super().__init__(params, {"lr": lr, "max_norm": max_norm})

    def state_passes(self) -> float:
        """None: SGD keeps no state."""
        return 0.0

    def init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """SGD keeps no state, as ``torch.optim.SGD`` without momentum."""

    def apply_rows(self, param: Tensor, state: dict[str, Any], group: dict[str, Any], gradient: RowGradient) -> None:
        gradient.sgd(param, group["lr"])
