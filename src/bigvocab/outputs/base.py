"""The :class:`OutputLayer` contract shared by every method.

Public methods accept ``hidden`` of shape (N, H) or (B, S, H) and ``target`` of the matching
leading shape (single-label) or that shape plus a last dimension T (multi-label: T positives per
row, padded with -1); they validate once, flatten to (N, H) / (N,) or (N, T), and call the
subclass's private ``_loss(hidden, target, context)`` / ``_log_prob(hidden, target)`` /
``_log_softmax(hidden)`` / ``_topk(hidden, k)``, which write only the mathematics on flat tensors.
Results are reshaped back to the caller's leading shape.

**Multi-label targets** (TensorFlow's ``num_true``) train on the uniform mixture over a row's
positives: loss_i = (1/T_i) Σ_j -log p(y_ij | h_i) over its T_i valid positives, the
cross-entropy against 1/T_i on each. The base class does it for every layer by flattening the
valid (row, positive) pairs into the single-label ``_loss`` and weighing each pair 1/T_i
(:meth:`OutputLayer._multi_label_loss`), which is exact for objectives defined per target; layers
whose positives must share a candidate set override it (``sampled``, ``neg``, ``bce``), and so do
those that can pay one normaliser per row instead of one per positive (``full``, ``selfnorm``,
``infreq``). Exact
``log_prob`` of a multi-label target is (N, T), 0 at the padding. A label listed twice in a row
counts twice. See ``docs/design/candidates-and-multilabel.md``.

**Hard negatives** (``loss(..., negatives=ids)``, ids shaped like a multi-label target) are
validated here and reach only the layers that declare :attr:`OutputLayer.takes_negatives`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar, overload

import torch
from torch import Tensor, nn

from bigvocab.declarations import Option, constructor_options
from bigvocab.errors import ConfigError
from bigvocab.outputs.cost import Cost, fused_state_cost
from bigvocab.outputs.engine import EngineTables
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.outputs.sparse_grads import mark_distinct_rows
from bigvocab.registry import OUTPUTS, ROW_OPTIMIZERS, build, keyword_options
from bigvocab.validation import check_positive_int

REDUCTIONS = ("mean", "sum", "none")

#: What some layers need besides H and V: training frequencies (``counts``), the vocabulary
#: strings (``words``) and (V, D) word vectors (``vectors``). ``create_output`` takes each of
#: them for any layer and passes it only to the layers that declare it (:meth:`OutputLayer.side_inputs`).
SIDE_INPUTS = ("counts", "words", "vectors")


class OutputLayer(nn.Module):
    """A distribution over ``num_classes`` classes given an ``in_features``-dim hidden state.

    ``loss`` is the training objective (an estimate for sampling-based methods); ``log_prob``,
    ``log_softmax`` and ``topk`` are always exact and normalised over the whole vocabulary, so
    perplexities of all methods are comparable.
    """

    #: True when ``loss`` produces sparse gradients (only touched rows) for some parameters,
    #: so the trainer must pick an optimiser that accepts them.
    sparse_grad: bool = False

    #: True when ``topk`` is an exact search that prunes with probability bounds (a tree node or
    #: a cluster bounds every class below it): its cost then depends on how peaked the
    #: distribution is, cheap for a trained model and dear for an untrained, flat one.
    topk_by_search: bool = False

    #: True when ``log_softmax`` and ``topk`` in eval mode reuse a table that their first call
    #: after a parameter change computes (cnn's V output embeddings): a one-off cost per model.
    eval_cache: bool = False

    #: True when the layer has ``score(hidden, target)``: an unnormalised score that training makes
    #: close to log p (Devlin et al. 2014), for decoding; never for perplexity.
    self_normalised: bool = False

    #: True when a training step holds the dense (N, V) logits, their softmax and gradient at once
    #: (the textbook ``nn.Linear`` + cross-entropy), so a caller should check memory first.
    dense_logits: bool = False

    #: The optimiser that updates :meth:`sparse_parameters` in the backward (:meth:`fuse_optimizer`), or None.
    fused_optimizer: FusedRowOptimizer | None = None

    #: Named forms of the method (label -> constructor options), e.g. hsm's trees: the bench
    #: gives each its own row and the contract suite tests each. Empty: the defaults are the one form.
    variants: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    #: The forms ``bigvocab bench --retrieval`` trains by default (label -> constructor options;
    #: the label "" is the layer's own name). Empty: the layer runs there only when asked for.
    retrieval_variants: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    #: The word2vec update that the compiled engine runs for this layer, ``"neg"`` or ``"hs"``, or
    #: None (see :mod:`bigvocab.outputs.engine`); such a layer also writes ``engine_unsupported``
    #: and ``_engine_tables``.
    engine_kind: ClassVar[str | None] = None

    #: True when ``loss`` takes hard negatives per example (``negatives=``).
    takes_negatives: ClassVar[bool] = False

    #: Why :meth:`shard_vocabulary` cannot split this layer (one line), for layers that have no
    #: vocabulary-parallel form.
    unsharded_reason: ClassVar[str] = "no vocabulary-parallel form is written for it"

    #: True for the one layer the others are measured against and a language model gets when none
    #: is named: the exact softmax, trained on its exact gradient (see :func:`reference_output`).
    reference: ClassVar[bool] = False

    #: Other names users know an option by, option -> name: ``bigvocab train`` accepts
    #: ``--NAME`` as another spelling of the option's flag (gensim's ``--negative`` for ``num_samples``).
    flag_aliases: ClassVar[Mapping[str, str]] = {}

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.in_features = check_positive_int("in_features", in_features)
        self.num_classes = check_positive_int("num_classes", num_classes)
        if num_classes < 2:
            raise ConfigError(f"num_classes must be at least 2, got {num_classes}")

    # ------------------------------------------------------------------ declarations
    @classmethod
    def accepted_options(cls, options: Mapping[str, Any]) -> set[str] | None:
        """The keywords the constructor takes given ``options`` (which may pick a part, e.g. a
        scorer, with keywords of its own), or None when any keyword is accepted."""
        return keyword_options(cls)

    @classmethod
    def side_inputs(cls, options: Mapping[str, Any]) -> frozenset[str]:
        """Which of :data:`SIDE_INPUTS` the layer built with ``options`` reads."""
        accepted = cls.accepted_options(options)
        return frozenset(name for name in SIDE_INPUTS if accepted is None or name in accepted)

    @classmethod
    def option_sources(cls, options: Mapping[str, Any]) -> list[type]:
        """The classes whose constructors and ``Args`` sections declare the options of the layer
        built with ``options``, most specific first: the layer's class and its bases below
        :class:`OutputLayer` (a layer that hands options to a part it builds adds the part's class)."""
        return [klass for klass in cls.__mro__ if issubclass(klass, OutputLayer) and klass is not OutputLayer]

    @classmethod
    def declared_options(cls, options: Mapping[str, Any] | None = None) -> dict[str, Option]:
        """Each keyword option of the layer built with ``options`` (:meth:`accepted_options`; all
        the keywords its constructors name when it accepts any), with the kind of value, the
        default and the help that :meth:`option_sources` declare (:mod:`bigvocab.declarations`).
        The side inputs are among them; H and V are not."""
        options = options or {}
        sources = cls.option_sources(options)
        accepted = cls.accepted_options(options)
        if accepted is None:
            accepted = {name for source in sources for name in inspect.signature(source).parameters}
        return constructor_options(accepted - {"in_features", "num_classes"}, sources)

    def rebuild_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor options that rebuild this layer, built with ``options``, without the side
        inputs a run gets from outside its corpus (word vectors): how a run records a layer whose
        structure it built from them, so that evaluating or resuming never needs them again. A
        layer that folds such an input into its structure returns that structure among them."""
        return dict(options)

    def train_cost(self, target: Tensor) -> Cost | None:
        """FLOPs and bytes a training step on the targets (N,) must spend, from the layer's shape
        and options (see :mod:`bigvocab.outputs.cost`); None when the layer has no cost model."""
        return None

    def step_cost(self, target: Tensor) -> Cost | None:
        """:meth:`train_cost` with the state traffic of the layer's fused optimiser, if any
        (:func:`~bigvocab.outputs.cost.fused_state_cost`): what a step as trained costs."""
        cost = self.train_cost(target)
        if cost is None or self.fused_optimizer is None:
            return cost
        return fused_state_cost(cost, self.fused_optimizer.state_passes())

    def log_prob_cost(self, target: Tensor) -> Cost | None:
        """FLOPs and bytes of exact ``log_prob`` for the targets (N,), forward only; None when the
        layer has no cost model."""
        return None

    def engine_unsupported(self) -> str | None:
        """Why word2vec's compiled engine cannot train this layer as built; None when it can."""
        if self.engine_kind is not None:
            return None
        compiled = [name for name in OUTPUTS.names() if OUTPUTS.get(name).engine_kind is not None]
        name = getattr(type(self), "registered_name", type(self).__name__)
        return f"the engine trains {' and '.join(compiled)} layers, not {name!r}"

    def engine_tables(self) -> EngineTables:
        """What the compiled engine reads and updates in place (:mod:`bigvocab.outputs.engine`);
        a :class:`ConfigError` saying why when :meth:`engine_unsupported` refuses."""
        reason = self.engine_unsupported()
        if reason is not None:
            raise ConfigError(reason)
        return self._engine_tables()

    def _engine_tables(self) -> EngineTables:
        raise NotImplementedError

    def element_size(self) -> int:
        """Bytes per number of the layer's parameters (its dtype's)."""
        return next(self.parameters()).element_size()

    def factory_kwargs(self) -> dict[str, Any]:
        """``device`` and ``dtype`` of the layer's parameters, for the parts it builds after them."""
        param = next(self.parameters())
        return {"device": param.device, "dtype": param.dtype}

    def shard_vocabulary(self, group: Any, *, partition: Any = None) -> OutputLayer:
        """This rank's part of the layer split over the process ``group`` (vocabulary parallel,
        :mod:`bigvocab.outputs.parallel`): the same values and gradients as the one-process layer, each
        rank holding a share of the per-class parameters. It may reuse this layer's modules, so
        use only the returned layer afterwards. ``partition`` (class ranges per rank) applies to
        layers split by contiguous class ranges. A layer with a sharded form overrides this."""
        raise ConfigError(f"{type(self).__name__} cannot be made vocabulary-parallel: {self.unsharded_reason}")

    # ------------------------------------------------------------------ public, validated
    def loss(
        self,
        hidden: Tensor,
        target: Tensor,
        reduction: str = "mean",
        *,
        context: Tensor | None = None,
        negatives: Tensor | None = None,
    ) -> Tensor:
        """Training objective; ``reduction`` is ``mean`` (over examples), ``sum`` or ``none``
        (one value per example, shaped like ``hidden.shape[:-1]``, multi-label or not).

        ``target`` is ``hidden.shape[:-1]`` (one class per example) or that plus (T,) (several
        positives per example, padded with -1; see the module docstring).

        ``context`` (optional, ids shaped like ``hidden.shape[:-1]``) is the token before each
        target. Models that know it always pass it; it reaches the subclass's ``_loss`` flattened
        to (N,), and only context-conditioned proposals (``ais`` with the ``bigram`` sampler,
        Bengio & Senécal 2008) read it.

        ``negatives`` (optional, ids shaped ``hidden.shape[:-1] + (m,)``, -1 for padding) are
        hard negatives given per example, for the layers that take them (:attr:`takes_negatives`).
        """
        if reduction not in REDUCTIONS:
            raise ConfigError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        if negatives is not None and not self.takes_negatives:
            raise ConfigError(self._no_negatives_message())
        if torch.is_grad_enabled():
            mark_distinct_rows(self.sparse_parameters())
        flat_hidden, flat_target, lead = self._flatten(hidden, target, multi_label=True)
        flat_context = None if context is None else self._flatten_ids("context", context, lead, hidden.device)
        flat_negatives = None
        if negatives is not None:
            flat_negatives = self._flatten_ids("negatives", negatives, lead, hidden.device, per_row=True, padded=True)
        per_example = self._batch_loss(flat_hidden, flat_target, flat_context, flat_negatives)
        if reduction == "mean":
            return per_example.mean()
        if reduction == "sum":
            return per_example.sum()
        return per_example.reshape(lead)

    def log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        """Exact normalised log p(target | hidden), shape = target.shape; for a multi-label
        target, each positive's, and 0 (with zero gradient) where the target is -1 padding."""
        flat_hidden, flat_target, lead = self._flatten(hidden, target, multi_label=True)
        if target.dim() == hidden.dim():
            return self._multi_label_log_prob(flat_hidden, flat_target).reshape(target.shape)
        return self._log_prob(flat_hidden, flat_target).reshape(lead)

    def log_softmax(self, hidden: Tensor) -> Tensor:
        """Exact log-distribution over all classes, shape (..., V)."""
        flat_hidden, _, lead = self._flatten(hidden, None)
        return self._log_softmax(flat_hidden).reshape(*lead, self.num_classes)

    def topk(self, hidden: Tensor, k: int, *, index=None, normalise: bool = False) -> tuple[Tensor, Tensor]:
        """The ``k`` most probable classes: (values, ids), each of shape (..., k), best first.

        Without ``index`` this is the exact top-k and the values are exact log-probabilities
        (``normalise`` has no effect): O(N·V·H), the layer's own fast path where it has one.

        With ``index`` (from :meth:`build_index`) the ids are an approximate search's and the
        values are the exact logits of those ids: the search and the rescoring of its
        candidates, far below O(N·V·H). ``normalise=True`` turns them into exact log-probabilities
        by adding log Z, one streamed pass over all V rows, O(N·V·H): as dear as the exact
        top-k, so ask for it only where probabilities are needed (a self-normalised layer,
        ``selfnorm`` or ``nce``, was trained to give logits near log-probabilities already).
        """
        check_positive_int("k", k)
        if k > self.num_classes:
            raise ConfigError(f"k={k} exceeds the number of classes ({self.num_classes})")
        flat_hidden, _, lead = self._flatten(hidden, None)
        if index is None:
            values, ids = self._topk(flat_hidden, k)
        else:
            values, ids = self._topk_indexed(flat_hidden, k, index, normalise)
        return values.reshape(*lead, k), ids.reshape(*lead, k)

    # ------------------------------------------------------------------ approximate top-k (bigvocab.index)
    def build_index(self, kind: str | None = None, **options: Any):
        """An approximate top-k index over the layer's output rows [W_w, b_w] (see
        :mod:`bigvocab.index`; ``kind`` defaults to ``bigvocab.index.default_kind()``). It is a cache
        of the weights: once they change, ``topk(index=)`` refuses it until it is rebuilt."""
        from bigvocab.index import build_index, default_kind

        return build_index(*self._indexed_rows(), kind=kind or default_kind(), **options)

    def _topk_indexed(self, hidden: Tensor, k: int, index, normalise: bool) -> tuple[Tensor, Tensor]:
        weight, bias = self._indexed_rows()
        index.check_fresh(weight, bias)
        logits, ids = index.topk(hidden, weight, bias, k)
        if normalise:
            # log Z = s_w - log p(w) for the best id w: the layer's exact log_prob, one streamed
            # pass over all V rows, O(N·V·H), as dear as the exact top-k.
            with torch.no_grad():
                logits = logits - (logits[:, :1] - self._log_prob(hidden, ids[:, 0])[:, None])
        return logits, ids

    def _indexed_rows(self) -> tuple[Tensor, Tensor | None]:
        """The free (V, H) output rows and (V,) bias or None that an index is built from."""
        raise ConfigError(
            f"{type(self).__name__} has no free (V, H) output matrix to index (build_index, topk(index=))"
        )

    def forward(self, hidden: Tensor, target: Tensor) -> Tensor:
        return self.loss(hidden, target)

    def sparse_parameters(self) -> list[nn.Parameter]:
        """The parameters that ``loss`` gives sparse gradients (only the touched rows), so the
        trainer can hand them to a sparse-capable optimiser. Layers with some dense parameters
        among sparse ones override this."""
        return list(self.parameters()) if self.sparse_grad else []

    def fuse_optimizer(self, name: str, *, lr: float, **options: Any) -> FusedRowOptimizer:
        """Update this layer's :meth:`sparse_parameters` inside the backward from now on, with the
        fused row optimiser ``name`` (``bigvocab.registry.ROW_OPTIMIZERS``: ``sgd``, ``adagrad``,
        ``rowwise_adagrad``, ``sparse_adam``), and return it (a ``torch.optim.Optimizer`` whose
        ``step`` has nothing left to do: give the other parameters their own optimiser).

        ``options`` are the method's (``eps``, ``betas``, ``lr_decay``...) and ``max_norm``, which
        clips each sparse parameter's step gradient by its own L2 norm before its update. The
        layer keeps the optimiser (:attr:`fused_optimizer`; a second call replaces it); save its
        ``state_dict()`` with the model's. See :mod:`bigvocab.outputs.fused`."""
        params = self.sparse_parameters()
        if not params:
            raise ConfigError(f"{type(self).__name__} has no sparse parameters to fuse an optimizer into")
        if self.fused_optimizer is not None:
            self.fused_optimizer.release()
        optimizer = build(ROW_OPTIMIZERS, name, (params,), {}, {"lr": lr, **options})
        self.fused_optimizer = optimizer
        return optimizer

    def _no_negatives_message(self) -> str:
        takers = [name for name in OUTPUTS.names() if getattr(OUTPUTS.get(name), "takes_negatives", False)]
        name = getattr(type(self), "registered_name", type(self).__name__)
        return f"output layer {name!r} takes no negatives= (hard negatives); the layers that do: {', '.join(takers)}"

    # ------------------------------------------------------------------ for subclasses
    def _batch_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None, negatives: Tensor | None) -> Tensor:
        """(N, H), target (N,) or (N, T) padded with -1, context (N,) or None, negatives (N, m) or
        None (only for layers that take them) -> (N,) per-example loss: ``_loss``, or the mixture
        of :meth:`_multi_label_loss`."""
        if target.dim() == 2:
            return self._multi_label_loss(hidden, target, context)
        return self._loss(hidden, target, context)

    def _multi_label_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        """(N, H), (N, T) padded with -1 -> (N,): the single-label ``_loss`` of each valid (row,
        positive) pair, weighed 1/T_i and summed per row -- the uniform mixture over the row's
        positives, exact for an objective defined per target."""
        rows, columns = (target >= 0).nonzero(as_tuple=True)
        pair_context = None if context is None else context.index_select(0, rows)
        pair_loss = self._loss(hidden.index_select(0, rows), target[rows, columns], pair_context)
        weight = (target >= 0).sum(dim=1).to(pair_loss.dtype).reciprocal()
        return pair_loss.new_zeros(hidden.shape[0]).index_add(0, rows, pair_loss * weight.index_select(0, rows))

    def _multi_label_log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        """(N, H), (N, T) padded with -1 -> (N, T) exact log-probabilities, 0 at the padding."""
        rows, columns = (target >= 0).nonzero(as_tuple=True)
        values = self._log_prob(hidden.index_select(0, rows), target[rows, columns])
        return values.new_zeros(target.shape).index_put((rows, columns), values)

    def _input_hidden(self, hidden: Tensor) -> Tensor:
        """The flat (N, H) hidden states as the layer's maths reads them: as given, unless the
        layer rescales its input (a temperature)."""
        return hidden

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        """(N, H), (N,), context (N,) or None -> (N,) per-example training loss. Defaults to the
        exact NLL."""
        return -self._log_prob(hidden, target)

    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        """(N, H), (N,) -> (N,) exact log-probabilities."""
        return self._log_softmax(hidden).gather(1, target.unsqueeze(1)).squeeze(1)

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        """(N, H) -> (N, V)."""
        raise NotImplementedError

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """(N, H) -> ((N, k), (N, k)); subclasses with structure override with a faster search."""
        return self._log_softmax(hidden).topk(k, dim=1)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, num_classes={self.num_classes}"

    # ------------------------------------------------------------------ validation
    @overload
    def _flatten(
        self, hidden: Tensor, target: None, *, multi_label: bool = False
    ) -> tuple[Tensor, None, tuple[int, ...]]: ...

    @overload
    def _flatten(
        self, hidden: Tensor, target: Tensor, *, multi_label: bool = False
    ) -> tuple[Tensor, Tensor, tuple[int, ...]]: ...

    def _flatten(
        self, hidden: Tensor, target: Tensor | None, *, multi_label: bool = False
    ) -> tuple[Tensor, Tensor | None, tuple[int, ...]]:
        """(N, H) hidden (as :meth:`_input_hidden` reads it), the target as (N,) or, when
        ``multi_label`` allows a last dimension of positives, (N, T), and the leading shape."""
        name = type(self).__name__
        if not isinstance(hidden, Tensor):
            raise TypeError(f"{name}: hidden must be a torch.Tensor, got {type(hidden).__name__}")
        if not hidden.is_floating_point():
            raise TypeError(f"{name}: hidden must be a floating-point tensor, got dtype {hidden.dtype}")
        if hidden.dim() not in (2, 3):
            raise ValueError(f"{name}: hidden must have shape (N, H) or (B, T, H), got {tuple(hidden.shape)}")
        if hidden.shape[-1] != self.in_features:
            raise ValueError(
                f"{name}: hidden has {hidden.shape[-1]} features in its last dimension, "
                f"expected in_features={self.in_features}"
            )
        if hidden.numel() == 0:
            raise ValueError(f"{name}: hidden {tuple(hidden.shape)} holds no examples (an empty batch)")
        self._check_placement(hidden)
        lead = tuple(hidden.shape[:-1])
        flat_hidden = self._input_hidden(hidden.reshape(-1, self.in_features))
        if target is None:
            return flat_hidden, None, lead
        per_row = multi_label and isinstance(target, Tensor) and target.dim() == len(lead) + 1
        flat_target = self._flatten_ids("target", target, lead, hidden.device, per_row=per_row, padded=per_row)
        if per_row:
            self._check_every_row_has_a_positive(flat_target, lead)
        return flat_hidden, flat_target, lead

    def _check_placement(self, hidden: Tensor) -> None:
        """hidden must live where the parameters do, in their dtype (unless autocast is on)."""
        param = next(self.parameters(), None)
        if param is None:
            return
        name = type(self).__name__
        if hidden.device != param.device:
            raise ValueError(f"{name}: hidden is on {hidden.device} but the layer's parameters are on {param.device}")
        if hidden.dtype != param.dtype and not torch.is_autocast_enabled(hidden.device.type):
            raise TypeError(
                f"{name}: hidden is {hidden.dtype} but the layer's parameters are {param.dtype}; "
                f"convert one of them (layer.to({hidden.dtype}) or hidden.to({param.dtype}))"
            )

    def _flatten_ids(
        self,
        what: str,
        ids: Tensor,
        lead: tuple[int, ...],
        device: torch.device,
        *,
        per_row: bool = False,
        padded: bool = False,
    ) -> Tensor:
        """Class ids shaped ``lead`` -> (N,) long, or with ``per_row`` shaped ``lead + (T,)`` ->
        (N, T); on ``device``, within [0, V), or [-1, V) when ``padded`` (-1 pads a row)."""
        name = type(self).__name__
        if not isinstance(ids, Tensor):
            raise TypeError(f"{name}: {what} must be a torch.Tensor, got {type(ids).__name__}")
        if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"{name}: {what} must hold integer class ids, got dtype {ids.dtype}")
        shape = tuple(ids.shape)
        if (shape[:-1] if per_row else shape) != lead or (per_row and shape[-1] == 0):
            extended = "(" + ", ".join(str(size) for size in lead) + (", m)" if what == "negatives" else ", T)")
            wanted = extended if what == "negatives" else f"{lead} (or {extended} for several positives per example)"
            raise ValueError(f"{name}: {what} shape {shape} does not match hidden's leading shape: expected {wanted}")
        if ids.device != device:
            raise ValueError(f"{name}: {what} is on {ids.device} but hidden is on {device}")
        flat = ids.reshape(-1, shape[-1]).long() if per_row else ids.reshape(-1).long()
        lowest = -1 if padded else 0
        span = f"[{lowest}, {self.num_classes})"
        if flat.device.type != "cpu":
            # Reading the range back would wait for the device at every call: assert on it instead
            # (the error then surfaces at the next synchronisation).
            inside = ((flat >= lowest) & (flat < self.num_classes)).all()
            torch._assert_async(inside, f"{name}: {what} id outside {span}")
        elif flat.numel():
            low, high = int(flat.min()), int(flat.max())
            if low < lowest or high >= self.num_classes:
                bad = low if low < lowest else high
                raise ValueError(f"{name}: {what} id {bad} is outside {span}")
        return flat

    def _check_every_row_has_a_positive(self, target: Tensor, lead: tuple[int, ...]) -> None:
        """A multi-label target (N, T) needs a positive (an id >= 0) in every row."""
        has_positive = (target >= 0).any(dim=1)
        name = type(self).__name__
        if target.device.type != "cpu":
            torch._assert_async(has_positive.all(), f"{name}: a target row holds only -1 padding (no positive)")
            return
        if not bool(has_positive.all()):
            row = int((~has_positive).nonzero()[0])
            where = tuple(int(i) for i in torch.unravel_index(torch.tensor(row), lead))
            raise ValueError(f"{name}: target row {where} holds only -1 padding; every example needs a positive")
