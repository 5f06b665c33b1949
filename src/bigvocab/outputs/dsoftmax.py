"""``dsoftmax`` -- differentiated softmax (Chen, Grangier & Auli 2015).

The vocabulary (ids sorted by decreasing frequency) is cut into bands; band b has its own
embedding size d_b, larger for frequent words, which have the data to fit more parameters. The
hidden state is partitioned into matching sections h = [h_1; ...; h_B] with sum_b d_b = H, and the
output matrix is block-diagonal: a word of band b scores s_w = h_b . W_b[w] + c_w. One softmax
normalises all V logits together, so the model is exact; it costs sum_b |band_b| d_b per example
instead of V H (a constant factor, not independent of V: D-softmax keeps the exact normaliser).

**Defaults are not the paper's.** Chen et al.'s band sizes could not be verified from the
sources searched (the paper's text was not among them), so rather than quote figures from memory
the defaults stay this library's own: band edges at 80% and
95% of the token mass (:mod:`bigvocab.outputs.bands`), sections halving from band to band. The
edges are the cutoffs ``adaptive`` chooses by default, which is how Grave et al. (2017,
"Efficient softmax approximation for GPUs", section 5) ran D-softmax beside their adaptive
softmax. Pass ``cutoffs`` and ``dims`` to use the paper's once checked against it.

``in_features`` must equal the sum of the section sizes: as in the paper, the last hidden layer
*is* the partition, and the layer holds no projection of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.bands import resolve_cutoffs
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost, dot_cost, hidden_cost
from bigvocab.outputs.functional import chunked_logsumexp, chunked_topk
from bigvocab.registry import OUTPUTS


def default_dims(in_features: int, num_bands: int) -> list[int]:
    """Section sizes halving from band to band (d_1 = 2 d_2 = 4 d_3 ...), summing to ``in_features``."""
    if in_features < num_bands:
        raise ConfigError(f"dsoftmax: in_features={in_features} cannot be split into {num_bands} non-empty sections")
    shares = [2.0**-b for b in range(num_bands)]
    dims = [max(1, math.floor(in_features * s / sum(shares))) for s in shares]
    dims[0] += in_features - sum(dims)
    return dims


@OUTPUTS.register("dsoftmax")
class DifferentiatedSoftmax(OutputLayer):
    """Block-diagonal output layer over frequency bands, exactly normalised.

    Args:
        in_features: H = sum of ``dims``.
        num_classes: V.
        cutoffs: band edges (see :func:`resolve_cutoffs`); default from ``counts`` or Zipf.
        dims: embedding size of each band (= its hidden section), default halving from band to band.
        counts: class frequencies, read only for the default cutoffs.
        bias: a bias per class.
        max_chunk_elements: logits held at once in the exact computations (None: 2**24, 2**28 on CUDA).
        device, dtype: where the parameters are created.

    Parameters: ``weights[b]`` (|band_b|, d_b) and ``biases[b]`` (|band_b|,).
    """

    unsharded_reason = "its frequency bands project h to different widths; no sharded form is written for them"

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        cutoffs: Sequence[int] | None = None,
        dims: Sequence[int] | None = None,
        counts=None,
        bias: bool = True,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        self.cutoffs = resolve_cutoffs(cutoffs, num_classes, counts, owner="dsoftmax")
        self.edges = [0, *self.cutoffs, num_classes]
        num_bands = len(self.edges) - 1
        if dims is None:
            self.dims = default_dims(in_features, num_bands)
        else:
            self.dims = [int(d) for d in dims]
            if len(self.dims) != num_bands or min(self.dims) < 1:
                raise ConfigError(
                    f"dsoftmax: dims must give a positive size for each of the {num_bands} bands, got {list(dims)}"
                )
            if sum(self.dims) != in_features:
                raise ConfigError(
                    f"dsoftmax: the section sizes {self.dims} sum to {sum(self.dims)}, but in_features={in_features}: "
                    "the hidden state is partitioned into the sections, so they must add up to H"
                )
        self.sections = [0, *torch.cumsum(torch.tensor(self.dims), 0).tolist()]
        self.max_chunk_elements = max_chunk_elements
        sizes = [hi - lo for lo, hi in zip(self.edges, self.edges[1:])]
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weights = nn.ParameterList(nn.Parameter(torch.empty(n, d, **factory)) for n, d in zip(sizes, self.dims))
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(n, **factory)) for n in sizes) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for weight, dim in zip(self.weights, self.dims):
            nn.init.uniform_(weight, -1.0 / math.sqrt(dim), 1.0 / math.sqrt(dim))
        for bias in self.biases or []:
            nn.init.zeros_(bias)

    def train_cost(self, target: Tensor) -> Cost:
        return self._band_cost(target, training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        return self._band_cost(target, training=False)

    def _band_cost(self, target: Tensor, *, training: bool) -> Cost:
        """Band b's |V_b| words are scored with its d_b hidden units only (Chen et al. 2015):
        every row pays Σ_b d_b·|V_b| multiply-adds."""
        per_row = sum(weight.numel() for weight in self.weights)
        weights = per_row + (self.num_classes if self.biases is not None else 0)
        size = self.element_size()
        return dot_cost(target.numel(), per_row, weights, element_size=size, training=training) + hidden_cost(
            target.numel(), self.in_features, element_size=size, training=training
        )

    def _bands(self, hidden: Tensor):
        """(index, h_b, W_b, bias_b, first id) for each band."""
        for b, (weight, lo) in enumerate(zip(self.weights, self.edges)):
            section = hidden[:, self.sections[b] : self.sections[b + 1]]
            yield b, section, weight, None if self.biases is None else self.biases[b], lo

    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_zs, target_logit = [], hidden.new_zeros(target.shape[0])
        for b, section, weight, bias, lo in self._bands(hidden):
            inside = (target >= lo) & (target < self.edges[b + 1])
            local = torch.where(inside, target - lo, torch.zeros_like(target))
            log_z, logit = chunked_logsumexp(section, weight, bias, local, max_chunk_elements=self.max_chunk_elements)
            log_zs.append(log_z)
            target_logit = target_logit + torch.where(inside, logit, torch.zeros_like(logit))
        return target_logit - torch.logsumexp(torch.stack(log_zs), 0)

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        logits = [
            section @ weight.t() + (0 if bias is None else bias) for _, section, weight, bias, _ in self._bands(hidden)
        ]
        return torch.log_softmax(torch.cat(logits, 1), dim=1)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """Per band: its log-normaliser and its own top-k (each memory-bounded), merged."""
        with torch.no_grad():
            log_zs, values, ids = [], [], []
            zeros = torch.zeros(hidden.shape[0], dtype=torch.long, device=hidden.device)
            for _, section, weight, bias, lo in self._bands(hidden):
                log_z, _ = chunked_logsumexp(section, weight, bias, zeros, max_chunk_elements=self.max_chunk_elements)
                band_values, band_ids = chunked_topk(
                    section, weight, bias, min(k, weight.shape[0]), max_chunk_elements=self.max_chunk_elements
                )
                log_zs.append(log_z)
                values.append(band_values + log_z[:, None])
                ids.append(band_ids + lo)
            total = torch.logsumexp(torch.stack(log_zs), 0)
            best, where = torch.cat(values, 1).topk(k, dim=1)
            return best - total[:, None], torch.cat(ids, 1).gather(1, where)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", cutoffs={self.cutoffs}, dims={self.dims}, bias={self.biases is not None}"
