"""Row-wise Adagrad on the touched rows, in the backward: one accumulator per row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from bigvocab.outputs.fused.gradients import RowGradient
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.registry import ROW_OPTIMIZERS


@ROW_OPTIMIZERS.register("rowwise_adagrad")
class FusedRowwiseAdagrad(FusedRowOptimizer):
    """Row-wise Adagrad, as FBGEMM's table-batched embeddings keep it (Mudigere et al. 2022): the
    running sum of each row's *mean* squared gradient, ``sum`` (V,), scales the whole row:
    ``sum[r] += mean(g_r ** 2)``, ``w[r] -= lr g_r / (sqrt(sum[r]) + eps)``. The state is V
    numbers instead of Adagrad's V x H.

    Args:
        params: the sparse parameters (V, ...).
        lr: the learning rate.
        eps: added to the square root of the sum.
        initial_accumulator_value: the sums' starting value.
        max_norm: clip each parameter's step gradient to this L2 norm (None: no clipping).
    """

    def __init__(
        self,
        params: Iterable[Any],
        *,
        lr: float,
        eps: float = 1e-8,
        initial_accumulator_value: float = 0.0,
        max_norm: float | None = None,
    ) -> None:
        defaults = {"lr": lr, "eps": eps, "initial_accumulator_value": initial_accumulator_value, "max_norm": max_norm}
        super().__init__(params, defaults)

    def state_passes(self) -> float:
        """One sum per row, read and written."""
        width = self.param_groups[0]["params"][0][0].numel()
        return 2.0 / width

    def init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = torch.tensor(0.0)
        state["sum"] = param.new_full((param.shape[0],), group["initial_accumulator_value"])

    def apply_rows(self, param: Tensor, state: dict[str, Any], group: dict[str, Any], gradient: RowGradient) -> None:
        state["step"] += 1
        gradient.rowwise_adagrad(param, state["sum"], group["lr"], group["eps"])
