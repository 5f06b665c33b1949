"""Scorers of the form s_w = h . e_w + b_w: an output embedding e_w (H,) per class and a bias.

:class:`RowScorer` writes the scoring maths once -- gathered scores, the chunked exact log Z and
top-k (:mod:`bigvocab.outputs.functional`) -- and leaves a subclass only *where the rows come
from*: a free (V, H) matrix (``linear``) or a function of the word (``cnn``'s CharCNN).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from bigvocab.outputs.cost import PASSES, Cost, dot_cost
from bigvocab.outputs.functional import (
    SORT_ABOVE_CLASSES_PER_ID,
    chunk_budget,
    chunked_logsumexp,
    chunked_topk,
    distinct_ids,
    example_logits,
    gather_rows,
    pairs_compiled,
    row_pair_dots,
)
from bigvocab.outputs.scorers.base import Scorer

#: How many times more multiply-adds per second a dense (N, H) x (H, U) product does than the pair
#: kernel's scattered row reads, on one core (numpy/MKL 7 GMAC/s against 0.4 at 2-3x
#: oversubscription; the ratio, not the rates, decides between them).
PRODUCT_ADVANTAGE = 16


class RowScorer(Scorer):
    """s_w(h) = h . e_w + b_w. Subclasses give :meth:`rows` and :meth:`all_rows` and may hold a
    ``bias`` (V,) parameter (None when the scorer has no bias)."""

    bias: nn.Parameter | None

    def row_parameters(self) -> int:
        """Numbers of per-word parameters behind one row (a free row's H, a correction...)."""
        raise NotImplementedError

    def row_flops(self) -> float:
        """FLOPs to compute one row forward (0 for a free row)."""
        return 0.0

    def shared_parameters(self) -> int:
        """Numbers of parameters every row is computed from (a CNN's filters)."""
        return 0

    def cost(self, pairs: float, rows: float, *, training: bool) -> Cost:
        """h . e_w for each pair; each distinct row read (and computed) once per pass."""
        per_row = self.row_parameters() + (self.bias is not None)
        weights = rows * per_row + self.shared_parameters()
        size = next(self.parameters()).element_size()
        computed = Cost(PASSES[training] * rows * self.row_flops(), 0.0)
        # A training step of a sparse objective gathers its chosen rows; every other pass streams them all.
        gathered = training and self.sparse_grad
        products = dot_cost(pairs, self.in_features, weights, element_size=size, training=training, gathered=gathered)
        return products + computed

    def rows(self, ids: Tensor) -> Tensor:
        """Output embeddings of ``ids`` (M,) -> (M, H); gradients only to those words' rows."""
        raise NotImplementedError

    def all_rows(self) -> Tensor:
        """All V output embeddings (V, H)."""
        raise NotImplementedError

    def _bias_of(self, ids: Tensor) -> Tensor | None:
        return None if self.bias is None else gather_rows(self.bias, ids, sparse=self.sparse_grad)

    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        if ids.dim() == 2 and pairs_compiled(hidden):
            return self._pair_logits(hidden, ids)
        flat = ids.reshape(-1)
        return self._dots(hidden, self.rows(flat), self._bias_of(flat), ids.shape)

    def _pair_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        """(N, M) scores of ids (N, M) from the U distinct rows, each gathered (or computed) once:
        no (N·M, H) copy of the rows, and a (U, H) rather than an (N·M, H) gradient.

        The N·M pairs go to the compiled pair kernel (:mod:`bigvocab.kernels.pairs`),
        unless the examples drew so many ids that the (N, U) product over every distinct row
        costs less: a BLAS product runs about :data:`PRODUCT_ADVANTAGE` times faster per
        multiply-add than the kernel's scattered row reads, so it wins while U is below that
        many times M (and its (N, U) block fits the chunk budget).
        """
        from bigvocab.kernels.pairs import pair_dots  # numba loads on first use

        if self._score_in_place(ids):
            logits = pair_dots(hidden, self.all_rows(), ids)
            return logits if self.bias is None else logits + self.bias[ids]
        unique, inverse = distinct_ids(ids, self.num_classes)
        budget = chunk_budget(self.max_chunk_elements, hidden.device)
        distinct = unique.numel()
        if distinct <= PRODUCT_ADVANTAGE * ids.shape[1] and ids.shape[0] * distinct <= budget:
            logits = (hidden @ self.rows(unique).t()).gather(1, inverse)
        elif self.free_rows:  # the rows of the (V, H) weight, read where they lie when its update is fused
            example = torch.arange(ids.shape[0], device=ids.device).repeat_interleave(ids.shape[1])
            flat = row_pair_dots(hidden, self.all_rows(), unique, example, inverse.reshape(-1), sparse=self.sparse_grad)
            logits = flat.view(ids.shape)
        else:
            logits = pair_dots(hidden, self.rows(unique), inverse)
        bias = self._bias_of(unique)
        return logits if bias is None else logits + bias[inverse]

    def _score_in_place(self, ids: Tensor) -> bool:
        """Whether the pair kernel may read ``ids``' rows where they lie in the (V, H) table: free
        rows, no gradient to build (a copy of the distinct rows exists for their (U, H) gradient;
        ``ais`` scores its blocks of draws this way), the ids many enough for the kernel's
        O(V) grouping, and too many distinct classes possible for the product to win. Saves the
        distinct ids and the gathered copy (at V = 10k, 65k draws: 7.5k rows, 7.5 MB); ``ais``'s
        step at V = 100k ran about 1.1x faster, at 10k no faster (``docs/design/ais-blocks.md``)."""
        return (
            self.free_rows
            and not torch.is_grad_enabled()
            and PRODUCT_ADVANTAGE * ids.shape[1] < self.num_classes <= SORT_ABOVE_CLASSES_PER_ID * ids.numel()
        )

    def target_and_class_logits(self, hidden: Tensor, target: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
        own = target if target.dim() == 2 else target.unsqueeze(1)
        width = own.shape[1]
        if ids.dim() == 2 and pairs_compiled(hidden):
            logits = self._pair_logits(hidden, torch.cat([own, ids], dim=1))
            own_logit = logits[:, :width]
            return (own_logit if target.dim() == 2 else own_logit.squeeze(1)), logits[:, width:]
        # One gather (one CNN pass, for computed rows) over the targets and the ids together: one
        # sparse gradient for the rows of both.
        both = torch.cat([own.reshape(-1), ids.reshape(-1)])
        rows, bias = self.rows(both), self._bias_of(both)
        m = own.numel()
        own_logit = self._dots(hidden, rows[:m], None if bias is None else bias[:m], own.shape)
        class_logit = self._dots(hidden, rows[m:], None if bias is None else bias[m:], ids.shape)
        return (own_logit if target.dim() == 2 else own_logit.squeeze(1)), class_logit

    def _dots(self, hidden: Tensor, rows: Tensor, bias: Tensor | None, shape: tuple[int, ...]) -> Tensor:
        """Scores of rows (M, H) (+ bias (M,)) gathered for ids of ``shape``: (M,) shared by
        every hidden row, or (N, M') one set per row -> (N, M) or (N, M')."""
        if len(shape) == 1:
            # The bias enters the product's output (addmm) rather than a second (N, M) pass.
            return hidden @ rows.t() if bias is None else torch.addmm(bias, hidden, rows.t())
        # A product and a sum rather than bmm, which runs N tiny (M', H) x (H, 1) products: with
        # M' = 1 (the targets of shared draws) neg[shared]'s step at V = 1M fell from 5.0 to 2.1 ms.
        logits = (rows.reshape(*shape, self.in_features) * hidden.unsqueeze(1)).sum(dim=2)
        return logits if bias is None else logits + bias.reshape(shape)

    def log_normaliser(
        self, hidden: Tensor, target: Tensor, *, equal_row_weights: bool = False
    ) -> tuple[Tensor, Tensor]:
        return chunked_logsumexp(
            hidden,
            self.all_rows(),
            self.bias,
            target,
            max_chunk_elements=self.max_chunk_elements,
            equal_row_weights=equal_row_weights,
        )

    def topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return chunked_topk(hidden, self.all_rows(), self.bias, k, max_chunk_elements=self.max_chunk_elements)

    def logits(self, hidden: Tensor) -> Tensor:
        return example_logits(hidden, self.all_rows(), self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, num_classes={self.num_classes}, bias={self.bias is not None}"
