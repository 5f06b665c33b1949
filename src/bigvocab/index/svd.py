"""``svd`` -- SVD-softmax (Shim et al. 2017, "SVD-Softmax: Fast Softmax Approximation on Large
Vocabulary Neural Networks").

Factorise the output matrix W = U S Vᵀ (V x H) and rotate each query into the singular basis,
h̃ = Vᵀ h, so that W h = (U S) h̃ with the columns of U S ordered by singular value. The first
``rank`` columns carry most of every logit: the preview z̃ = (U S)[:, :rank] h̃[:rank] + b costs
V·rank multiply-adds instead of V·H, and the ``candidates`` best ids of the preview are rescored
exactly (the paper's "top-N" words, whose full-width logits it computes). The bias enters the
preview whole. Both knobs are search options: the rotated rows are kept at full width, so a
wider preview needs no rebuild. The preview still touches all V rows, so the speed-up is bounded by
H / rank (less the selection of the candidates among V).
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.index.base import ApproxIndex
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int

#: Preview logits (queries x classes) held at once.
_BLOCK_ELEMENTS = 1 << 24


@INDEXES.register("svd")
class SVDSoftmax(ApproxIndex):
    """Args:
    rows: (V, H + 2) lifted rows [W_w, b_w / beta, lift] (see :mod:`bigvocab.index.mips`).
    rank: width of the preview, 1..H (search option; default H / 8, at least 1).
    candidates: preview ids rescored exactly per query (search option; at least k).
    """

    SEARCH_OPTIONS = ("rank", "candidates")
    rank: int
    candidates: int

    def __init__(self, rows: Tensor, *, rank: int | None = None, candidates: int = 256) -> None:
        weight = rows[:, :-2]
        self.hidden = weight.shape[1]
        self.build_options = {}
        # The eigenvectors of WᵀW (H x H) are the right singular vectors, in float64 because the
        # smallest eigenvalues of a float32 Gram matrix lose their digits first.
        _, vectors = torch.linalg.eigh((weight.t() @ weight).double())
        self.basis = vectors.flip(1).float().contiguous()  # (H, H), columns by singular value, largest first
        self.rotated = (weight @ self.basis).t().contiguous()  # (H, V): U S, one component per row
        self.bias = rows[:, -2].contiguous()  # b / beta; the query's own column holds beta
        self.tune(rank=max(1, self.hidden // 8) if rank is None else rank, candidates=candidates)

    def _set_search_option(self, name: str, value: int) -> None:
        check_positive_int(name, value)
        setattr(self, name, min(value, self.hidden) if name == "rank" else value)

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        num_classes = self.rotated.shape[1]
        keep = min(num_classes, max(k, self.candidates))
        preview_queries = (queries[:, : self.hidden] @ self.basis)[:, : self.rank]
        beta = queries[:, self.hidden : self.hidden + 1]
        # Blocks of classes: each keeps its own best, and the best of those is the best overall.
        width = max(keep, _BLOCK_ELEMENTS // max(1, queries.shape[0]))
        values, ids = [], []
        for start in range(0, num_classes, width):
            stop = min(num_classes, start + width)
            preview = torch.addmm(beta * self.bias[start:stop], preview_queries, self.rotated[: self.rank, start:stop])
            best = preview.topk(min(keep, stop - start), dim=1)
            values.append(best.values)
            ids.append(best.indices + start)
        chosen = torch.cat(values, 1).topk(keep, dim=1).indices
        found = torch.cat(ids, 1).gather(1, chosen)
        query_rows = torch.arange(queries.shape[0]).repeat_interleave(keep)
        return query_rows, found.flatten()

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.basis, self.rotated, self.bias))
