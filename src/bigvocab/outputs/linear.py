"""The (V, H) weight matrix that the full softmax and every sampling- and normalisation-based
layer share.

Those methods differ only in their *training* objective; their model is the same linear softmax,
so exact evaluation (log-probabilities, the distribution, top-k) lives here once.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.functional import chunked_logsumexp, chunked_topk, gather_rows


class LinearOutput(OutputLayer):
    """Logits ``s = hidden @ weight.T + bias`` with ``weight`` (V, H) and optional ``bias`` (V,).

    Args:
        in_features: H, the hidden size.
        num_classes: V.
        bias: learn a per-class bias.
        max_chunk_elements: cap on the logits held at once during exact computations
            (default 2**24, i.e. 64 MiB in float32).
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        bias: bool = True,
        max_chunk_elements: Optional[int] = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        if max_chunk_elements is not None and max_chunk_elements < 1:
            raise ConfigError(f"max_chunk_elements must be positive, got {max_chunk_elements}")
        self.max_chunk_elements = max_chunk_elements
        self.weight = nn.Parameter(torch.empty(num_classes, in_features))
        self.bias = nn.Parameter(torch.zeros(num_classes)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def tie_weights(self, embedding: nn.Embedding) -> None:
        """Share ``weight`` with an input embedding (Press & Wolf 2017; Inan et al. 2017)."""
        if tuple(embedding.weight.shape) != (self.num_classes, self.in_features):
            raise ConfigError(
                f"cannot tie an embedding of shape {tuple(embedding.weight.shape)} to an output "
                f"weight of shape {(self.num_classes, self.in_features)}"
            )
        self.weight = embedding.weight

    # ------------------------------------------------------------------ helpers for subclasses
    def log_normaliser(self, hidden: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        """Exact ``(log Z, s_target)`` over the whole vocabulary, memory-bounded, differentiable."""
        return chunked_logsumexp(
            hidden, self.weight, self.bias, target, max_chunk_elements=self.max_chunk_elements
        )

    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        """Logits of the classes ``ids``: ids (M,) -> (N, M) shared by every row, or ids (N, M)
        -> (N, M) one set per row. Gradients reach only the M gathered rows (sparse)."""
        flat = ids.reshape(-1)
        rows = gather_rows(self.weight, flat, sparse=self.sparse_grad)
        bias = gather_rows(self.bias, flat, sparse=self.sparse_grad) if self.bias is not None else None
        if ids.dim() == 1:
            logits = hidden @ rows.t()
            return logits if bias is None else logits + bias
        rows = rows.reshape(*ids.shape, self.in_features)
        logits = torch.bmm(rows, hidden.unsqueeze(2)).squeeze(2)
        return logits if bias is None else logits + bias.reshape(ids.shape)

    def target_logits(self, hidden: Tensor, target: Tensor) -> Tensor:
        """(N, H), (N,) -> (N,) the logit of each example's own target (sparse gradient)."""
        return self.class_logits(hidden, target.unsqueeze(1)).squeeze(1)

    def logits(self, hidden: Tensor) -> Tensor:
        """All (N, V) logits; only for small V or where the caller needs them all."""
        logits = hidden @ self.weight.t()
        return logits if self.bias is None else logits + self.bias

    # ------------------------------------------------------------------ exact evaluation
    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_z, target_logit = self.log_normaliser(hidden, target)
        return target_logit - log_z

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return torch.log_softmax(self.logits(hidden), dim=1)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return chunked_topk(hidden, self.weight, self.bias, k, max_chunk_elements=self.max_chunk_elements)

    # ------------------------------------------------------------------ approximate top-k (bigvocab.index)
    def build_index(self, kind: Optional[str] = None, **options):
        """An index over the rows [W_w, b_w] for approximate top-k (see :mod:`bigvocab.index`;
        ``kind`` defaults to ``bigvocab.index.DEFAULT_KIND``); it goes stale when the weights change (``topk`` then refuses it)."""
        from bigvocab.index import DEFAULT_KIND, build_index

        return build_index(self.weight, self.bias, kind=kind or DEFAULT_KIND, **options)

    def _topk_indexed(self, hidden: Tensor, k: int, index, normalise: bool) -> tuple[Tensor, Tensor]:
        index.check_fresh(self.weight, self.bias)
        logits, ids = index.topk(hidden, self.weight, self.bias, k)
        if not normalise:
            return logits, ids
        with torch.no_grad():  # exact log Z: one streamed pass over all V rows, O(N·V·H)
            log_z, _ = self.log_normaliser(hidden, ids[:, 0])
        return logits - log_z[:, None], ids

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"
