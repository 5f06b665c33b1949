"""The :class:`Scorer` contract: *how a word is scored*, separate from *how a layer is trained*.

A scorer maps a hidden state h (H,) and a class id w to a real score s_w(h). The softmax over
those scores, p(w | h) = exp(s_w) / Z(h), is the model every objective-based layer
(:class:`~bigvocab.outputs.objective.ScoredOutput`: ``full``, ``sampled``, ``ais``, ``target``,
``nce``, ``neg``, ``selfnorm``, ``infreq``) trains and evaluates; the objective decides which
scores a training step asks for, the scorer how they are computed. Any objective runs over any
scorer: ``create_output("nce", H, V, scorer="cnn", words=...)``.

What a scorer answers (all tensors on the scorer's device and dtype; N rows, H features, V classes):

* :meth:`class_logits` -- ``hidden`` (N, H) and ``ids`` (M,) shared by every row, or (N, M) one
  set per row -> (N, M) scores. Gradients reach only the rows (per-word parameters) of the M
  ids, as sparse tensors when :attr:`sparse_grad` is set: this is what lets a sampled step cost
  O(M) rather than O(V).
* :meth:`target_logits` -- (N, H), (N,) -> (N,) the score of each row's own target.
* :meth:`target_and_class_logits` -- both at once, the targets one (N,) or several (N, T) per
  row; a scorer whose rows are computed (the CharCNN) computes each distinct word once.
* :meth:`log_normaliser` -- the exact (log Z, s_target), each (N,), over the whole vocabulary,
  streamed in chunks of at most ``max_chunk_elements`` scores and differentiable.
* :meth:`topk` -- the exact k best (log-probability, id) pairs, (N, k) each, streamed likewise.
* :meth:`logits` -- all (N, V) scores, for ``log_softmax`` and small V only.
* :meth:`sparse_parameters` -- the per-word parameters that :meth:`class_logits` gathers sparsely.
* :meth:`cost` -- FLOPs and bytes of computing ``pairs`` scores over ``rows`` distinct classes
  (:mod:`bigvocab.outputs.cost`), from which each objective writes its cost model.

A new scorer subclasses :class:`Scorer` (or :class:`~bigvocab.outputs.scorers.rows.RowScorer`
when its scores are h . e_w + b_w for some output embedding e_w), implements the methods above,
is registered with ``@SCORERS.register("name")``, and takes ``(in_features, num_classes, *,
bias, max_chunk_elements, device, dtype, <its own options>)``; its own options then become
keywords of every objective (the factory checks them).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.cost import Cost
from bigvocab.validation import check_positive_int


class Scorer(nn.Module):
    """Scores s_w(h) of V classes for H-dimensional hidden states (see the module docstring).

    Class attributes a scorer declares:
        eval_cache: in ``eval()`` mode without autograd, whole-vocabulary calls reuse a table
            computed on their first call after a parameter change (cnn's V embeddings).
        free_rows: every class owns a free (H,) output row (``linear``), which objectives may
            initialise (word2vec's zero start) or tie to an input embedding.
    """

    eval_cache: bool = False
    free_rows: bool = False

    def __init__(self, in_features: int, num_classes: int, *, max_chunk_elements: int | None = None) -> None:
        super().__init__()
        self.in_features = check_positive_int("in_features", in_features)
        self.num_classes = check_positive_int("num_classes", num_classes)
        if max_chunk_elements is not None:
            check_positive_int("max_chunk_elements", max_chunk_elements)
        #: Scores held at once by whole-vocabulary computations; None = the library default
        #: (``functional.chunk_budget``: 2**24, 2**28 on CUDA; row blocks of an equal-weight
        #: softmax step up to the weight's size, at most 2**28: ``functional.chunked_logsumexp``).
        self.max_chunk_elements = max_chunk_elements
        #: Set by the owning objective: gather per-word rows with sparse gradients.
        self.sparse_grad = False

    # ------------------------------------------------------------------ vocabulary parallelism
    def shard_rows(self, group: Any, partition: Any = None) -> Scorer | None:
        """This rank's part of the scorer split by class over the process ``group`` (see
        :mod:`bigvocab.distributed`), or None when its scores do not come from per-class rows
        alone (a CNN computes every row from shared filters)."""
        return None

    # ------------------------------------------------------------------ chosen ids
    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        """(N, H), ids (M,) or (N, M) -> (N, M) scores."""
        raise NotImplementedError

    def target_logits(self, hidden: Tensor, target: Tensor) -> Tensor:
        """(N, H), (N,) -> (N,) the score of each row's own target."""
        return self.class_logits(hidden, target.unsqueeze(1)).squeeze(1)

    def target_and_class_logits(self, hidden: Tensor, target: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
        """Scores of ``target`` -- (N,) one per row, or (N, T) several per row -- and (N, M) scores
        of ``ids`` (M,) or (N, M), in one call."""
        own = self.class_logits(hidden, target) if target.dim() == 2 else self.target_logits(hidden, target)
        return own, self.class_logits(hidden, ids)

    # ------------------------------------------------------------------ whole vocabulary
    def log_normaliser(
        self, hidden: Tensor, target: Tensor, *, equal_row_weights: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Exact ``(log Z, s_target)``, each (N,), memory-bounded and differentiable.

        ``equal_row_weights``: the caller will weigh every row's log Z alike (a mean or sum of
        per-example losses), a hint a scorer may use to form gradients earlier; the result is exact
        whatever the weights turn out to be."""
        raise NotImplementedError

    def topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """Exact top-k ``(log-probabilities, ids)``, (N, k) each, best first."""
        raise NotImplementedError

    def logits(self, hidden: Tensor) -> Tensor:
        """All (N, V) scores at once; only for small V or where the caller needs them all."""
        raise NotImplementedError

    # ------------------------------------------------------------------ parameters
    def sparse_parameters(self) -> list[nn.Parameter]:
        """The per-word parameters :meth:`class_logits` gathers with sparse gradients (when
        :attr:`sparse_grad` is set); shared parameters (a CNN's filters) are dense."""
        return []

    def zero_rows_(self) -> None:
        """Set every free output row to zero (word2vec's start); only scorers with
        :attr:`free_rows` can."""
        name = getattr(type(self), "registered_name", type(self).__name__)
        raise ConfigError(f"the {name!r} scorer has no free output rows to zero")

    def reset_parameters(self) -> None:
        """Draw the initial parameters again (scorers whose start is not random keep theirs)."""

    def cost(self, pairs: float, rows: float, *, training: bool) -> Cost:
        """FLOPs and bytes of ``pairs`` scores (hidden row, class) over ``rows`` distinct classes:
        forward only, or forward and backward when ``training``."""
        raise NotImplementedError
