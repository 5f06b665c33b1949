"""The optimiser's update of a sparse layer's rows, applied inside the backward.

A sparse layer's step reads its touched rows in the forward, forms their gradient in the backward,
and then -- on ``torch.optim``'s path -- the gradient becomes a sparse COO tensor that autograd
stores, the optimiser coalesces, and the update reads and writes again. A
:class:`FusedRowOptimizer` attached to the layer's sparse parameters (``OutputLayer.fuse_optimizer``)
takes that gradient where the backward forms it and updates the touched rows in place, in one
compiled pass, as FBGEMM's table-batched embeddings do (Mudigere et al. 2022); ``param.grad``
stays None.

How the rows reach it: :func:`~bigvocab.outputs.functional.gather_rows` of a fused parameter
gathers through :class:`_FusedGather`, whose input is a zero-size *anchor* leaf owned by the
parameter's record instead of the parameter itself. Each gather's backward hands its (ids, rows'
gradient) to the record; autograd runs the anchor's gradient accumulator once per backward, after
every gather of the graph, and the anchor's post-accumulate-grad hook (PyTorch's documented way to
step an optimiser in the backward) sums the pieces, clips them, and updates. So a parameter
gathered several times in one graph, or with repeated ids, gets one update of its summed
gradient, as ``torch.optim`` would.

Clipping: with ``max_norm``, each fused parameter's step gradient is clipped by its own L2 norm,
before its update, exactly as ``clip_grad_norm_`` of that parameter alone would clip it; the
global norm over the other parameters no longer includes it.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.weak import WeakIdKeyDictionary

from bigvocab.errors import ConfigError, NonFiniteError
from bigvocab.outputs.fused.gradients import GatheredRows, RowGradient
from bigvocab.outputs.sparse_grads import clip_norm_

#: parameter -> a weak reference to its :class:`_FusedRows`: only the optimiser holds the record,
#: so dropping the optimiser returns its parameters to ``torch.optim``'s path.
_FUSED: WeakIdKeyDictionary = WeakIdKeyDictionary()


class _FusedRows:
    """One fused parameter: its optimiser, its anchor, and the row gradients of this backward."""

    def __init__(self, optimizer: FusedRowOptimizer, param: nn.Parameter) -> None:
        self.optimizer = optimizer
        self.param = param
        self.anchor = torch.zeros(0, dtype=param.dtype, device=param.device, requires_grad=True)
        self.pieces: list[tuple[Tensor, Tensor]] = []
        #: Operations that read the parameter in graphs since the last update: a one-pass update
        #: (:mod:`bigvocab.outputs.fused.pairs`) may write the rows only when it is the one reader.
        self.uses = 0
        # a weak reference: the hook lives in the anchor, which the record holds, and a cycle
        # through a tensor's hooks is not collected
        self.anchor.register_post_accumulate_grad_hook(functools.partial(_apply_pieces, weakref.ref(self)))

    def apply(self) -> None:
        """Sum this backward's pieces and update (the anchor's hook, once per backward)."""
        self.uses = 0
        pieces, self.pieces = self.pieces, []
        if pieces:
            rows, grads = summed_rows(pieces)
            self.optimizer.update_rows(self.param, rows, grads)


def _apply_pieces(record: weakref.ref[_FusedRows], anchor: Tensor) -> None:
    anchor.grad = None
    alive = record()
    if alive is not None:
        alive.apply()


class _FusedGather(torch.autograd.Function):
    """``param[ids]`` whose backward hands the rows' gradient to the parameter's fused optimiser
    and returns none for the parameter (an empty one for the anchor)."""

    @staticmethod
    def forward(ctx, param: Tensor, ids: Tensor, anchor: Tensor, record: _FusedRows) -> Tensor:
        ctx.save_for_backward(ids)
        ctx.record = record
        record.uses += 1
        return param.index_select(0, ids)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (ids,) = ctx.saved_tensors
        ctx.record.pieces.append((ids, grad))
        return None, None, grad.new_zeros(0), None


def fused_record(param: Tensor) -> _FusedRows | None:
    """``param``'s fused record when it has a fused optimiser and autograd records, else None."""
    reference = _FUSED.get(param)
    record = None if reference is None else reference()
    if record is None or not (param.requires_grad and torch.is_grad_enabled()):
        return None
    return record


def fused_gather(param: Tensor, ids: Tensor) -> Tensor | None:
    """``param[ids]`` (M, ...) through the fused update when ``param`` has a fused optimiser and
    autograd records, else None."""
    record = fused_record(param)
    return None if record is None else _FusedGather.apply(param.detach(), ids, record.anchor, record)


def summed_rows(pieces: list[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
    """(rows (U,), gradients (U, ...)) of the distinct, sorted rows the pieces (ids (M,), rows'
    gradients (M, ...)) touch, the gradients of a row summed; a single piece of distinct sorted
    ids (the usual one: layers gather ``distinct_ids``) is returned as it is."""
    ids = pieces[0][0] if len(pieces) == 1 else torch.cat([piece[0] for piece in pieces])
    grads = pieces[0][1] if len(pieces) == 1 else torch.cat([piece[1] for piece in pieces])
    if ids.numel() < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids, grads
    rows, inverse = torch.unique(ids, sorted=True, return_inverse=True)
    return rows, grads.new_zeros((rows.shape[0], *grads.shape[1:])).index_add_(0, inverse, grads)


class FusedRowOptimizer(torch.optim.Optimizer):
    """An optimiser of rows whose update runs in the backward (see the module docstring).

    It is a ``torch.optim.Optimizer`` so that LR schedulers, ``state_dict`` / ``load_state_dict``
    and the trainer's checkpoints work on it unchanged; its :meth:`step` updates nothing (the rows
    were updated in the backward) and checks that no fused parameter received a gradient by
    another path. The update reads each group's ``lr`` when the backward runs.

    Subclasses give :meth:`init_state`, :meth:`apply_rows` and :meth:`state_passes`. Parameters:
    CPU, float32 or float64, contiguous, rows along the first dimension.

    Args:
        params: the sparse parameters (or groups of them).
        defaults: ``lr``, ``max_norm`` (None: no clipping) and the method's options.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        lr, max_norm = defaults["lr"], defaults["max_norm"]
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ConfigError(f"lr must be a finite number > 0, got {lr!r}")
        if max_norm is not None and not (isinstance(max_norm, (int, float)) and max_norm > 0):
            raise ConfigError(f"max_norm must be a number > 0 or None, got {max_norm!r}")
        super().__init__(params, defaults)
        self._records: list[_FusedRows] = []
        for group in self.param_groups:
            for param in group["params"]:
                _check_fusable(param)
                reference = _FUSED.get(param)
                if reference is not None and reference() is not None:
                    raise ConfigError("a parameter already has a fused optimizer (release() it first)")
                record = _FusedRows(self, param)
                _FUSED[param] = weakref.ref(record)
                self._records.append(record)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # load_state_dict comes here too, and keeps the records. A copy (deepcopy, pickle) has
        # none: it holds the state but updates nothing in the backward, so the copied parameters
        # train with sparse gradients until their layer is fused again.
        super().__setstate__(state)
        if not hasattr(self, "_records"):
            self._records = []

    def group_of(self, param: Tensor) -> dict[str, Any]:
        """The parameter group holding ``param``."""
        return next(g for g in self.param_groups if any(p is param for p in g["params"]))

    def state_passes(self) -> float:
        """Numbers of optimiser state read and written per number of a touched row in one update
        (for the cost models, :func:`~bigvocab.outputs.cost.fused_state_cost`)."""
        raise NotImplementedError

    def release(self) -> None:
        """Return this optimiser's parameters to ``torch.optim``'s path (sparse gradients)."""
        for record in self._records:
            reference = _FUSED.get(record.param)
            if reference is not None and reference() is record:
                del _FUSED[record.param]
        self._records = []

    def init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Fill the empty ``state`` of ``param`` (torch's names and types, where torch has the method)."""
        raise NotImplementedError

    def apply_rows(self, param: Tensor, state: dict[str, Any], group: dict[str, Any], gradient: RowGradient) -> None:
        """Update the touched rows of ``param`` and of its ``state`` in place from their
        ``gradient`` (one of :class:`RowGradient`'s updates)."""
        raise NotImplementedError

    def update_rows(self, param: Tensor, rows: Tensor, grads: Tensor) -> None:
        """One step of ``param``'s rows ``rows`` (distinct, sorted) with gradients ``grads``:
        clipped by their own norm when the group sets ``max_norm``, then :meth:`apply_rows`. A
        non-finite gradient is refused before any row moves."""
        group = self.group_of(param)
        if group["max_norm"] is not None:
            grads = grads.clone()  # the backward may still hold the gradient it handed over
            norm = clip_norm_([grads], group["max_norm"])
            if not math.isfinite(norm):
                shape = tuple(param.shape)
                raise NonFiniteError(f"non-finite gradient norm ({norm}) of the fused rows of a {shape} parameter")
        self._apply(param, group, GatheredRows(rows, grads))

    def update_from_pairs(self, param: Tensor, gradient: RowGradient) -> bool:
        """One step of ``param``'s rows from a gradient not yet summed (a kernel sums each row's
        and steps it at once); False, and nothing done, when the group clips (the norm needs the
        whole gradient first)."""
        group = self.group_of(param)
        if group["max_norm"] is not None:
            return False
        self._apply(param, group, gradient)
        return True

    def _apply(self, param: Tensor, group: dict[str, Any], gradient: RowGradient) -> None:
        with torch.no_grad():
            state = self.state.get(param, {})  # a method without state (SGD) leaves none, as torch's
            if not state:
                self.init_state(param, group, state)
                if state:
                    self.state[param] = state
            self.apply_rows(param, state, group, gradient)

    @torch.no_grad()
    def step(self, closure=None):
        """Nothing to update (the backward did); raises when a fused parameter holds a gradient,
        which only a path around the fused gather can give it (a weight tied to an input
        embedding, or a loss over all its rows)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    raise ConfigError(
                        f"a fused {tuple(param.shape)} parameter received a gradient outside its fused update "
                        "(tied to another module, or used in a loss over all its rows); train it with torch.optim"
                    )
        return loss


def _check_fusable(param: Tensor) -> None:
    if not isinstance(param, Tensor) or not param.requires_grad or param.dim() == 0:
        raise ConfigError("a fused optimizer takes parameters with rows that require grad")
    if param.device.type != "cpu" or param.dtype not in (torch.float32, torch.float64) or not param.is_contiguous():
        raise ConfigError(
            f"fused row updates run on contiguous CPU float32/float64 parameters, got {param.dtype} on "
            f"{param.device}; train this layer with torch.optim"
        )
