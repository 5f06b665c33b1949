"""Parallel SGD that averages models instead of gradients: local SGD and elastic averaging SGD.

Under data parallelism (:mod:`bigvocab.distributed.data_parallel`) every rank averages its
gradients after every backward, so P ranks step as one process on P times the batch. The two
methods here let each rank step on its own batches with its own optimiser and communicate only
every ``period`` steps, which costs one all-reduce of the parameters per period instead of one of
the gradients per step:

* **local SGD** (periodic model averaging; Zinkevich et al. 2010, Lin et al. 2020): after every
  ``period``-th step each rank's parameters are replaced by their average over the ranks, with
  PyTorch's :func:`torch.distributed.algorithms.model_averaging.utils.average_parameters`;
* **elastic averaging SGD** (EASGD, Zhang, Choromanska & LeCun 2015, the synchronous form of their
  equations 5-6): every rank also keeps the *centre* variable x̃, the same on every rank, so no
  parameter server is needed; after every ``period``-th step, with the elastic moving rate α,

      x_i ← x_i − α (x_i − x̃)          (each rank is pulled toward the centre)
      x̃  ← x̃ + α Σ_j (x_j − x̃)        (the centre moves toward the ranks; one all-reduce)

  The paper suggests α = β / P with β = 0.9, the default here. The centre is the model EASGD
  evaluates and the one its checkpoints hold; the ranks' own models explore around it.

Both are built on :class:`torch.distributed.algorithms.model_averaging.averagers.ModelAverager`.
Every rank calls :meth:`after_step` after each optimiser step with the step count; the
averaging happens on the same steps everywhere, so no rank waits on a collective the others skip.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.algorithms.model_averaging.averagers import ModelAverager
from torch.distributed.algorithms.model_averaging.utils import average_parameters

from bigvocab.errors import ConfigError

#: EASGD's β: α = β / P (Zhang et al. 2015, section 5).
EASGD_BETA = 0.9


class LocalSGD(ModelAverager):
    """Replace every rank's parameters by their average after every ``period``-th step."""

    name = "local-sgd"

    def __init__(self, period: int, process_group: Any = None) -> None:
        super().__init__(process_group)
        self.period = period

    def average_parameters(self, params: Iterable[nn.Parameter]) -> None:
        average_parameters(iter(list(params)), self.process_group)

    def after_step(self, model: nn.Module, step: int) -> None:
        self.step = step
        if step % self.period == 0:
            self.average_parameters(model.parameters())

    def consensus(self, model: nn.Module) -> list[Tensor]:
        """The average of the ranks' parameters (a collective: every rank calls it)."""
        flat = torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])
        dist.all_reduce(flat, group=self.process_group)
        flat /= dist.get_world_size(self.process_group)
        return _unflatten(flat, model)

    def state_dict(self) -> dict[str, Any]:
        return {"method": self.name, "period": self.period}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        _check_method(self.name, state)


class ElasticAveraging(ModelAverager):
    """EASGD's elastic pull between every rank and a centre variable kept alike on every rank."""

    name = "easgd"

    def __init__(self, period: int, model: nn.Module, alpha: float | None = None, process_group: Any = None) -> None:
        super().__init__(process_group)
        self.period = period
        world = dist.get_world_size(self.process_group)
        self.alpha = EASGD_BETA / world if alpha is None else alpha
        if not 0 < self.alpha * world < 1 + 1e-12:
            raise ConfigError(
                f"elastic_alpha x processes must lie in (0, 1] for the centre to stay between the ranks, "
                f"got {self.alpha} x {world}"
            )
        # every rank starts from rank 0's weights (broadcast before), so the centre starts alike
        self.centre = [p.detach().clone() for p in model.parameters()]

    def average_parameters(self, params: Iterable[nn.Parameter]) -> None:
        params = list(params)
        with torch.no_grad():
            differences = [p - c for p, c in zip(params, self.centre)]
            flat = torch.cat([d.reshape(-1) for d in differences])
            dist.all_reduce(flat, group=self.process_group)  # Σ_j (x_j − x̃)
            offset = 0
            for param, centre, difference in zip(params, self.centre, differences):
                total = flat[offset : offset + param.numel()].view_as(param)
                offset += param.numel()
                param.sub_(difference, alpha=self.alpha)
                centre.add_(total, alpha=self.alpha)

    def after_step(self, model: nn.Module, step: int) -> None:
        self.step = step
        if step % self.period == 0:
            self.average_parameters(model.parameters())

    def consensus(self, model: nn.Module) -> list[Tensor]:
        """The centre variable (the same on every rank; no communication)."""
        return [c.clone() for c in self.centre]

    def state_dict(self) -> dict[str, Any]:
        return {"method": self.name, "period": self.period, "alpha": self.alpha, "centre": self.centre}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        _check_method(self.name, state)
        with torch.no_grad():
            for centre, saved in zip(self.centre, state["centre"]):
                centre.copy_(saved)


def consensus_state(model: nn.Module, values: list[Tensor]) -> dict[str, Tensor]:
    """``model.state_dict()`` with the parameters replaced by ``values`` (buffers as they are)."""
    state = model.state_dict()
    names = {id(p): name for name, p in model.named_parameters()}
    for param, value in zip(model.parameters(), values):
        state[names[id(param)]] = value.to(param.dtype).reshape(param.shape).clone()
    return state


def _unflatten(flat: Tensor, model: nn.Module) -> list[Tensor]:
    values, offset = [], 0
    for param in model.parameters():
        values.append(flat[offset : offset + param.numel()].view_as(param).to(param.dtype))
        offset += param.numel()
    return values


def _check_method(name: str, state: dict[str, Any]) -> None:
    if state.get("method") != name:
        raise ConfigError(f"the checkpoint's model averaging is {state.get('method')!r}, this run's {name!r}")
