"""Objective-based layers: a softmax over a :class:`~bigvocab.outputs.scorers.base.Scorer`'s
scores, trained by an objective.

:class:`ScoredOutput` is the base of ``full``, ``sampled``, ``ais``, ``target``, ``nce``, ``neg``,
``selfnorm`` and ``infreq``. It builds the scorer (``scorer=`` a registered name such as
``"linear"`` or ``"cnn"``, or a :class:`Scorer`), evaluates exactly through it (``log_prob``,
``log_softmax``, ``topk`` all normalise over the whole vocabulary), and leaves the subclass only
its training objective: ``_loss(hidden, target, context)`` written with :meth:`class_logits`,
:meth:`target_logits`, :meth:`target_and_class_logits` and :meth:`log_normaliser`.

The scorer's own options (``words=`` and ``correction_dim=`` for ``cnn``...) are keywords of every
objective; :meth:`ScoredOutput.accepted_options` lists them so the factory can check them. The
scorer's attributes also read through the layer (``layer.weight`` is ``layer.scorer.weight``), and
a state dict saved before scorers existed (``weight`` rather than ``scorer.weight``) still loads.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, cast

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost, hidden_cost
from bigvocab.outputs.functional import fill_padding
from bigvocab.outputs.scorers.base import Scorer
from bigvocab.registry import SCORERS, keyword_options

ScorerSpec = str | Scorer


class ScoredOutput(OutputLayer):
    """p(w | h) = exp(s_w(h)) / Σ_v exp(s_v(h)) with s from ``self.scorer``; the subclass's
    ``_loss`` is its training objective (an estimate for the sampling-based ones).

    Args (shared by every objective):
        scorer: ``"linear"`` (a free row per class; the default, :attr:`default_scorer`),
            ``"cnn"`` (rows from spelling), any registered scorer name
            (``bigvocab.outputs.factory.list_scorers()``), or a built Scorer.
        bias, max_chunk_elements: as for the scorer, which they are passed to (with ``linear``, a
            per-class bias; scores held at once by exact whole-vocabulary computations, None =
            2**24, 2**28 on CUDA, and row blocks up to the weight's size, at most 2**28, in
            ``full``'s step).
        device, dtype: where the parameters are created.
        **scorer_options: the scorer's own options (``words=``, ``correction_dim=``... for cnn).

    Class attribute an objective declares:
        sparse_grad: its training step touches only some rows, which are then gathered with sparse
            gradients (the instance's flag is False when the scorer has no per-word parameters).
    """

    sparse_grad: bool = False

    #: The scorer when ``scorer`` is None.
    default_scorer: str = "linear"

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        scorer: ScorerSpec | None = None,
        bias: bool = True,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
        **scorer_options: Any,
    ) -> None:
        super().__init__(in_features, num_classes)
        if scorer is None:
            scorer = self.default_scorer
        if isinstance(scorer, Scorer):
            if scorer_options:
                raise ConfigError(f"options {sorted(scorer_options)} go to a scorer by name, not to a built Scorer")
            if (scorer.in_features, scorer.num_classes) != (in_features, num_classes):
                raise ConfigError(
                    f"the scorer scores {scorer.num_classes} classes of {scorer.in_features} features but the "
                    f"layer has {num_classes} of {in_features}"
                )
            self.scorer = scorer
        elif isinstance(scorer, str):
            self.scorer = SCORERS.create(
                scorer,
                in_features,
                num_classes,
                bias=bias,
                max_chunk_elements=max_chunk_elements,
                device=device,
                dtype=dtype,
                **scorer_options,
            )
        else:
            raise ConfigError(f"scorer must be a registered name or a Scorer, got {type(scorer).__name__}")
        self.scorer.sparse_grad = type(self).sparse_grad
        self.sparse_grad = type(self).sparse_grad and bool(self.scorer.sparse_parameters())
        self.eval_cache = self.scorer.eval_cache
        self._reset_objective()

    def shard_vocabulary(self, group: Any, *, partition: Any = None) -> OutputLayer:
        """Split the scorer's rows over ``group`` in place (every objective is written against the
        scorer contract, so it needs nothing else); only per-class rows can be split."""
        sharded = self.scorer.shard_rows(group, partition)
        if sharded is None:
            kind = getattr(type(self.scorer), "registered_name", type(self.scorer).__name__)
            raise ConfigError(
                f"{type(self).__name__} over the {kind!r} scorer cannot be made vocabulary-parallel: only "
                "objectives over the linear scorer (one free (V, H) row and bias per class) can be split by rows"
            )
        self.scorer = sharded
        return self

    @classmethod
    def accepted_options(cls, options: Mapping[str, Any]) -> set[str] | None:
        """The constructor's keywords; one that passes ``**scorer_options`` on to this base also
        takes this base's and the chosen scorer's."""
        own = keyword_options(cls)
        if own is not None:
            return own
        own = _named_keywords(cls) | _named_keywords(ScoredOutput)
        scorer = options.get("scorer") or cls.default_scorer
        if not isinstance(scorer, str):
            return own
        scorer_options = keyword_options(SCORERS.get(scorer))
        return None if scorer_options is None else own | scorer_options

    @classmethod
    def option_sources(cls, options: Mapping[str, Any]) -> list[type]:
        """The objective's classes, then the chosen scorer's, which declares the options passed on to it."""
        scorer = options.get("scorer") or cls.default_scorer
        own = super().option_sources(options)
        return own + [SCORERS.get(scorer)] if isinstance(scorer, str) and scorer in SCORERS else own

    # ------------------------------------------------------------------ for the objectives
    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        """Scores of ``ids`` (M,) shared or (N, M) per row -> (N, M); sparse row gradients."""
        return self.scorer.class_logits(hidden, ids)

    def target_logits(self, hidden: Tensor, target: Tensor) -> Tensor:
        """(N, H), (N,) -> (N,) the score of each example's own target."""
        return self.scorer.target_logits(hidden, target)

    def target_and_class_logits(self, hidden: Tensor, target: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
        """Both of the above in one scorer call: (N,) and (N, M)."""
        return self.scorer.target_and_class_logits(hidden, target, ids)

    def log_normaliser(
        self, hidden: Tensor, target: Tensor, *, equal_row_weights: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Exact ``(log Z, s_target)`` over the whole vocabulary, memory-bounded, differentiable;
        ``equal_row_weights`` as in :meth:`bigvocab.outputs.scorers.base.Scorer.log_normaliser`."""
        return self.scorer.log_normaliser(hidden, target, equal_row_weights=equal_row_weights)

    def sparse_parameters(self) -> list[nn.Parameter]:
        return self.scorer.sparse_parameters() if self.sparse_grad else []

    # ------------------------------------------------------------------ cost model
    def train_cost(self, target: Tensor) -> Cost:
        scores, classes = self._train_scores(target)
        hidden = hidden_cost(target.numel(), self.in_features, element_size=self.element_size(), training=True)
        return self.scorer.cost(scores, classes, training=True) + hidden

    def log_prob_cost(self, target: Tensor) -> Cost:
        rows = target.numel()
        hidden = hidden_cost(rows, self.in_features, element_size=self.element_size(), training=False)
        return self.scorer.cost(rows * self.num_classes, self.num_classes, training=False) + hidden

    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """(scores, distinct classes) a training step on the targets (N,) computes; by default
        the exact normaliser's N·V scores over all V classes."""
        return float(target.numel() * self.num_classes), float(self.num_classes)

    def reset_parameters(self) -> None:
        """Draw the scorer's initial parameters again, then the objective's own start."""
        self.scorer.reset_parameters()
        self._reset_objective()

    def _reset_objective(self) -> None:
        """Initial values that the objective prescribes (NCE's bias, word2vec's zero rows)."""

    # ------------------------------------------------------------------ exact evaluation
    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_z, target_logit = self.scorer.log_normaliser(hidden, target)
        return target_logit - log_z

    def multi_label_scores(
        self, hidden: Tensor, target: Tensor, *, equal_row_weights: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Exact log Z (N,) and the scores (N, T) of multi-label targets (N, T) padded with -1 (a
        padding position scores as its row's first positive): one log Z per row for all of its
        positives, rather than one per (row, positive) pair."""
        filled = fill_padding(target)
        log_z, _ = self.log_normaliser(hidden, filled[:, 0], equal_row_weights=equal_row_weights)
        return log_z, self.class_logits(hidden, filled)

    def _multi_label_log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_z, scores = self.multi_label_scores(hidden, target)
        return (scores - log_z.unsqueeze(1)).masked_fill(target < 0, 0.0)

    def _mean_positive_score(self, scores: Tensor, target: Tensor) -> Tensor:
        """(N,) the mean of each row's scores (N, T) over its valid positives (target >= 0)."""
        valid = (target >= 0).to(scores.dtype)
        return (scores * valid).sum(dim=1) / valid.sum(dim=1)

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return torch.log_softmax(self.scorer.logits(hidden), dim=1)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return self.scorer.topk(hidden, k)

    # ------------------------------------------------------------------ approximate top-k (bigvocab.index)
    def _indexed_rows(self) -> tuple[Tensor, Tensor | None]:
        if not self.scorer.free_rows:
            return super()._indexed_rows()
        # A scorer with free rows holds them as ``weight`` (V, H) and ``bias`` (V,) or None.
        return cast(Tensor, self.scorer.weight), cast("Tensor | None", self.scorer.bias)

    # ------------------------------------------------------------------ the scorer through the layer
    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            scorer = self.__dict__.get("_modules", {}).get("scorer")
            if scorer is None or name.startswith("__"):
                raise
        try:
            return getattr(scorer, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__!r} and its scorer have no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        # ``layer.bias -= x`` assigns the result back: it must land where the parameter lives.
        scorer = self.__dict__.get("_modules", {}).get("scorer")
        if scorer is not None and not self._owns(name) and hasattr(scorer, name):
            setattr(scorer, name, value)
        else:
            super().__setattr__(name, value)

    def _owns(self, name: str) -> bool:
        return (
            name in self.__dict__
            or hasattr(type(self), name)
            or any(name in self.__dict__.get(store, {}) for store in ("_parameters", "_buffers", "_modules"))
        )

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # Keys of the one-class layers (``weight``, ``cnn.*``...) belong to the scorer now.
        own = set(self._parameters) | set(self._buffers) | set(self._modules)
        for key in [k for k in state_dict if k.startswith(prefix)]:
            if key[len(prefix) :].split(".", 1)[0] not in own:
                state_dict[prefix + "scorer." + key[len(prefix) :]] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _named_keywords(cls: type) -> set[str]:
    """The keyword-only parameters a constructor names (its ``**kwargs`` aside)."""
    return {p.name for p in inspect.signature(cls).parameters.values() if p.kind is p.KEYWORD_ONLY}
