"""Optimisers by name, with sparse gradients kept sparse where the method allows it.

Each registered optimiser is a function ``(params, config, *, sparse) -> Optimizer | None``: with
``sparse=False`` it builds the dense optimiser, with ``sparse=True`` the variant that accepts sparse
gradients and updates only the rows a step touched, or None when the method has none (a running
state that changes every row at every step cannot be sparse).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn
from torch.optim.adagrad import adagrad as functional_adagrad

from bigvocab.errors import ConfigError
from bigvocab.models.base import LanguageModel
from bigvocab.outputs.fused import FusedRowOptimizer
from bigvocab.outputs.sparse_grads import clip_norm_, rows_are_distinct
from bigvocab.registry import OPTIMIZERS

if TYPE_CHECKING:
    from bigvocab.models.base import WordModel
    from bigvocab.train.config import TrainConfig


@OPTIMIZERS.register("sgd")
def sgd(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """Plain stochastic gradient descent; sparse gradients stay sparse."""
    return torch.optim.SGD(params, lr=config.lr, weight_decay=0.0 if sparse else config.weight_decay)


@OPTIMIZERS.register("momentum")
def momentum(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """SGD with heavy-ball momentum (Polyak 1964); sparse gradients are made dense."""
    if sparse:
        return None
    return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)


@OPTIMIZERS.register("nesterov")
def nesterov(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """SGD with Nesterov momentum (Sutskever et al. 2013); sparse gradients are made dense."""
    if sparse:
        return None
    return torch.optim.SGD(
        params, lr=config.lr, momentum=config.momentum, nesterov=True, weight_decay=config.weight_decay
    )


class Adagrad(torch.optim.Adagrad):
    """torch's Adagrad (Duchi et al. 2011), with two changes to its step.

    * A sparse gradient of whole rows on a CPU float32/float64 parameter is applied by a compiled
      kernel that reads and writes each touched row once
      (:func:`~bigvocab.kernels.adagrad.adagrad_rows`; 2.3-2.5x faster than torch's sparse
      step at the quality runs' sizes, 5.7-9x at V = 1M, ``docs/design/coalesced-sparse-gradients.md``); everything else (dense
      gradients, other devices, ``fused``, ``differentiable``, weight decay) takes torch's own
      functional step, and the state (``step``, ``sum``) is torch's, so checkpoints of either load
      into the other.
    * The step opts out of torch's sparse invariant checks explicitly: torch's sparse step builds
      tensors from indices it has just coalesced, and left to the implicit default torch prints a
      warning about memory errors on the first step of every run, a note to torch's developers that
      reads to a user as a fault of the run.
    """

    def step(self, closure=None):
        from bigvocab.kernels.adagrad import adagrad_rows, compiled_adagrad_applies  # numba on first use

        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # As torch's step: no autograd unless the optimiser is built differentiable.
        with (
            torch.sparse.check_sparse_tensor_invariants(enable=False),
            torch.set_grad_enabled(self.defaults["differentiable"]),
        ):
            for group in self.param_groups:
                params: list[Tensor] = []
                grads: list[Tensor] = []
                sums: list[Tensor] = []
                steps: list[Tensor] = []
                _, has_complex = self._init_group(group, params, grads, sums, steps)
                plain = not (group["fused"] or group["differentiable"] or group["weight_decay"])
                rest = []
                for index, (param, grad, total, count) in enumerate(zip(params, grads, sums, steps)):
                    if not (plain and compiled_adagrad_applies(param, total, grad)):
                        rest.append(index)
                        continue
                    count += 1
                    rate = group["lr"] / (1 + (float(count) - 1) * group["lr_decay"])
                    if not rows_are_distinct(grad):  # repeated rows are summed first, as torch does
                        grad = grad.coalesce()
                    values = -grad._values() if group["maximize"] else grad._values()
                    adagrad_rows(param, total, grad._indices()[0], values, rate, group["eps"])
                if rest:
                    functional_adagrad(
                        [params[i] for i in rest],
                        [grads[i] for i in rest],
                        [sums[i] for i in rest],
                        [steps[i] for i in rest],
                        fused=group["fused"],
                        grad_scale=getattr(self, "grad_scale", None),
                        found_inf=getattr(self, "found_inf", None),
                        has_sparse_grad=any(grads[i].is_sparse for i in rest),
                        foreach=group["foreach"],
                        differentiable=group["differentiable"],
                        has_complex=has_complex,
                        lr=group["lr"],
                        weight_decay=group["weight_decay"],
                        lr_decay=group["lr_decay"],
                        eps=group["eps"],
                        maximize=group["maximize"],
                    )
        return loss


@OPTIMIZERS.register("adagrad")
def adagrad(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """Adagrad (Duchi et al. 2011); sparse gradients stay sparse."""
    return Adagrad(params, lr=config.lr, weight_decay=0.0 if sparse else config.weight_decay)


@OPTIMIZERS.register("adadelta")
def adadelta(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """Adadelta (Zeiler 2012); sparse gradients are made dense."""
    return None if sparse else torch.optim.Adadelta(params, lr=config.lr, weight_decay=config.weight_decay)


@OPTIMIZERS.register("rmsprop")
def rmsprop(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """RMSprop (Tieleman & Hinton 2012); sparse gradients are made dense."""
    return None if sparse else torch.optim.RMSprop(params, lr=config.lr, weight_decay=config.weight_decay)


@OPTIMIZERS.register("adam")
def adam(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """Adam (Kingma & Ba 2015), or AMSGrad (Reddi et al. 2018) with ``amsgrad``; sparse gradients get
    SparseAdam, which updates only the rows touched (lazy Adam: a row's moments move when it is
    touched), and are made dense under ``amsgrad``, which SparseAdam lacks."""
    if sparse:
        return None if config.amsgrad else torch.optim.SparseAdam(params, lr=config.lr)
    return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay, amsgrad=config.amsgrad)


@OPTIMIZERS.register("adamw")
def adamw(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """AdamW (Loshchilov & Hutter 2019): Adam with the weight decay decoupled from the gradient,
    each step shrinking the weights by lr x weight_decay. Sparse gradients get SparseAdam while
    ``weight_decay`` is 0 (the two are then the same method); with decay every row shrinks at
    every step, so they are made dense."""
    if sparse:
        return None if config.amsgrad else torch.optim.SparseAdam(params, lr=config.lr)
    return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay, amsgrad=config.amsgrad)


@OPTIMIZERS.register("adamax")
def adamax(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """AdaMax (Kingma & Ba 2015, section 7), Adam with the infinity norm; its running maximum decays
    every row at every step, so sparse gradients are made dense."""
    return None if sparse else torch.optim.Adamax(params, lr=config.lr, weight_decay=config.weight_decay)


@OPTIMIZERS.register("nadam")
def nadam(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """Nadam (Dozat 2016), Adam with Nesterov momentum; its moments move every row at every step,
    so sparse gradients are made dense."""
    return None if sparse else torch.optim.NAdam(params, lr=config.lr, weight_decay=config.weight_decay)


@OPTIMIZERS.register("sparse_adam")
def sparse_adam(params: list[nn.Parameter], config: TrainConfig, *, sparse: bool) -> torch.optim.Optimizer | None:
    """The same as adam, under the name PyTorch users look for (SparseAdam on sparse gradients)."""
    return adam(params, config, sparse=sparse)


#: The fused row optimiser (``ROW_OPTIMIZERS``) that applies each registered optimiser's sparse
#: update in the backward, for those that have one (adam and adamw without decay are SparseAdam).
FUSED_ROWS = {
    "sgd": "sgd",
    "adagrad": "adagrad",
    "adam": "sparse_adam",
    "adamw": "sparse_adam",
    "sparse_adam": "sparse_adam",
}


def fuse_output_rows(model: WordModel, config: TrainConfig) -> FusedRowOptimizer | None:
    """The output layer's sparse parameters given a fused row optimiser (the update inside the
    backward, :mod:`bigvocab.outputs.fused`) where it applies, else None: ``config.fused_rows``,
    an optimiser of :data:`FUSED_ROWS` without weight decay or amsgrad, an output layer with
    sparse parameters on the CPU in float32/float64 that no other module shares (a weight tied to
    an input embedding takes gradients from both). ``clip_norm`` clips each fused parameter by
    its own norm."""
    output = model.output if isinstance(model, LanguageModel) else None
    if (
        output is None
        or not config.fused_rows
        or config.optimizer not in FUSED_ROWS
        or config.weight_decay
        or config.amsgrad
    ):
        return None
    params = output.sparse_parameters()
    outside = {id(p) for name, p in model.named_parameters(remove_duplicate=False) if not name.startswith("output.")}
    if not params or any(
        id(p) in outside or p.device.type != "cpu" or p.dtype not in (torch.float32, torch.float64) for p in params
    ):
        return None
    return output.fuse_optimizer(FUSED_ROWS[config.optimizer], lr=config.lr, max_norm=config.clip_norm)


def build_optimizers(
    model: WordModel, config: TrainConfig, *, fuse: bool = True
) -> tuple[list[torch.optim.Optimizer], list[nn.Parameter]]:
    """``(optimisers, dense_params)`` for ``model`` under ``config``.

    With ``fuse`` the output layer's sparse parameters get a fused row optimiser where it applies
    (:func:`fuse_output_rows`); it comes last in the list.

    Parameters in ``model.sparse_parameters()`` get the sparse-capable variant of the chosen method.
    Momentum, Nesterov, RMSprop and Adadelta keep a running state that changes every row at every
    step, and weight decay shrinks every row, so for them a sparse gradient cannot save work: those
    parameters join the dense optimiser, their gradients are made dense each step (the exact
    update of the method), and a warning names the cost. ``dense_params`` are the parameters whose
    sparse gradients the trainer densifies before stepping.
    """
    make = OPTIMIZERS.get(config.optimizer)
    fused = fuse_output_rows(model, config) if fuse else None
    fused_ids = {id(p) for group in fused.param_groups for p in group["params"]} if fused is not None else set()
    params = [p for p in model.parameters() if p.requires_grad and id(p) not in fused_ids]
    declared = model.sparse_parameters()
    sparse_ids = {id(p) for p in declared if p.requires_grad}
    sparse = [p for p in params if id(p) in sparse_ids]
    dense = [p for p in params if id(p) not in sparse_ids]
    optimizers = []
    # weight decay touches every row, so no method keeps its steps sparse under it
    sparse_optimizer = make(sparse, config, sparse=True) if sparse and not config.weight_decay else None
    if sparse and sparse_optimizer is None:
        elements = sum(p.numel() for p in sparse)
        if config.weight_decay:
            reason = "weight decay"
        else:
            reason = f"optimizer {config.optimizer!r}" + (" with amsgrad" if config.amsgrad else "")
        warnings.warn(
            f"{reason} does not support sparse gradients: the sparse gradients of {len(sparse)} parameter(s) "
            f"({elements:,} elements) are made dense every step; {', '.join(sparse_row_optimizers())} "
            "without weight decay (and adam without amsgrad) keep steps sparse",
            stacklevel=3,
        )
        dense = dense + sparse
    if dense:
        optimizers.append(make(dense, config, sparse=False))
    if sparse_optimizer is not None:
        optimizers.append(sparse_optimizer)
    if fused is not None:
        optimizers.append(fused)
    if not optimizers:
        raise ConfigError("the model has no trainable parameters")
    return optimizers, dense


def sparse_row_optimizers() -> list[str]:
    """The registered optimisers that keep sparse gradients sparse (update only the rows touched)."""
    from bigvocab.train.config import TrainConfig

    probe = [nn.Parameter(torch.zeros(1))]
    return [name for name in OPTIMIZERS.names() if OPTIMIZERS.get(name)(probe, TrainConfig(), sparse=True) is not None]


def clip_grad_norm(params: Iterable[nn.Parameter], max_norm: float) -> float:
    """Scale gradients in place so that their global L2 norm is at most ``max_norm``; returns the
    norm before clipping.

    Works with sparse gradients: an uncoalesced COO gradient may list a row several times (one
    entry per occurrence in the batch), and its norm is that of the *summed* rows, so such a
    gradient is coalesced before its values enter the norm; one whose rows are distinct already
    (every sampling and tree layer's, :func:`~bigvocab.outputs.sparse_grads.rows_are_distinct`) is
    used as it is.
    """
    grads = []
    for param in params:
        if param.grad is None:
            continue
        if param.grad.is_sparse:
            if not rows_are_distinct(param.grad):
                param.grad = param.grad.coalesce()
            grads.append(param.grad._values())
        else:
            grads.append(param.grad)
    return clip_norm_(grads, max_norm)
