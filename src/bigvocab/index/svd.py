"""``svd`` -- SVD-softmax (Shim et al. 2017, "SVD-Softmax: Fast Softmax Approximation on Large
Vocabulary Neural Networks").

Factorise the output matrix W = U S Vᵀ (V x H) and rotate each query into the singular basis,
h̃ = Vᵀ h, so that W h = (U S) h̃ with the columns of U S ordered by singular value. The first
``rank`` columns carry most of every logit: the preview z̃ = (U S)[:, :rank] h̃[:rank] + b costs
V·rank multiply-adds instead of V·H, and the ``candidates`` best ids of the preview are rescored
exactly (the paper's "top-N" words, whose full-width logits it computes). The bias enters the
preview whole. Both knobs are search options: the rotated rows are kept at full width, so a
wider preview needs no rebuild (``tune`` copies its columns out). The preview still touches all V
rows, so the speed-up is bounded by H / rank; it runs as one compiled pass
(:mod:`bigvocab.kernels.preview`) that keeps each query's best candidates without writing the
(N, V) preview.
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.index.base import ApproxIndex
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int


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
        # (V, 1 + H): [b / beta, U S]; the query's own lifted column holds beta.
        self.rotated = torch.cat([rows[:, -2:-1], weight @ self.basis], dim=1)
        self.tune(rank=max(1, self.hidden // 8) if rank is None else rank, candidates=candidates)

    def _set_search_option(self, name: str, value: int) -> None:
        check_positive_int(name, value)
        setattr(self, name, min(value, self.hidden) if name == "rank" else value)
        if name == "rank":  # the preview's rows, contiguous for the compiled scan
            self.preview = self.rotated[:, : 1 + self.rank].contiguous()

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        from bigvocab.kernels.preview import best_rows

        keep = min(self.preview.shape[0], max(k, self.candidates))
        rotated = queries[:, : self.hidden] @ self.basis[:, : self.rank]
        preview_queries = torch.cat([queries[:, self.hidden : self.hidden + 1], rotated], dim=1).contiguous()
        found = torch.from_numpy(best_rows(preview_queries.numpy(), self.preview.numpy(), keep))
        return torch.arange(queries.shape[0]).repeat_interleave(keep), found.flatten()

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.basis, self.rotated, self.preview))
