"""Lazy Adam on the touched rows, in the backward, as ``torch.optim.SparseAdam``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from bigvocab.outputs.fused.gradients import RowGradient
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.registry import ROW_OPTIMIZERS


@ROW_OPTIMIZERS.register("sparse_adam")
class FusedSparseAdam(FusedRowOptimizer):
    """Adam (Kingma & Ba 2015) whose moments move only on the rows a step touched, with
    ``torch.optim.SparseAdam``'s semantics and state (``step`` counts the steps that touched the
    parameter; ``exp_avg``, ``exp_avg_sq`` (V, ...)), so either optimiser's checkpoint loads into
    the other.

    Args:
        params: the sparse parameters (V, ...).
        lr: the learning rate.
        betas: the moments' decay rates.
        eps: added to the square root of the second moment.
        max_norm: clip each parameter's step gradient to this L2 norm (None: no clipping).
    """

    def __init__(
        self,
        params: Iterable[Any],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        max_norm: float | None = None,
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "max_norm": max_norm})

    def state_passes(self) -> float:
        """Both moments, read and written: each as large as the rows."""
        return 4.0

    def init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(param)
        state["exp_avg_sq"] = torch.zeros_like(param)

    def apply_rows(self, param: Tensor, state: dict[str, Any], group: dict[str, Any], gradient: RowGradient) -> None:
        state["step"] += 1
        beta1, beta2 = group["betas"]
        step_size = group["lr"] * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
        gradient.sparse_adam(
            param, state["exp_avg"], state["exp_avg_sq"], step_size=step_size, betas=group["betas"], eps=group["eps"]
        )
