"""``adaptive`` -- adaptive softmax (Grave, Joulin, Cissé, Grangier & Jégou 2017).

The frequency-sorted vocabulary is cut at ``cutoffs`` into a head (the shortlist ``[0, c_1)``) and
tail clusters ``[c_i, c_{i+1})``. The head is a softmax over the shortlist plus one token per
cluster; cluster i is a softmax over its words computed from a projection of h to
H / div_value^(i+1) dimensions, so rare words cost little. p(w) = p_head(w) for a shortlist word,
p_head(cluster i) p_i(w) otherwise.

The parameters are laid out exactly as in :class:`torch.nn.AdaptiveLogSoftmaxWithLoss` (``head``,
``tail.i.0`` the projection, ``tail.i.1`` the cluster's output matrix), so their state_dicts are
interchangeable and the log-probabilities agree. Beyond it: an exact ``topk`` (a cluster token's
log-probability bounds every word of the cluster, so only clusters that can still beat the current
k-th candidate are scored), ``reduction``, (B, T, H) input, and a leaner loss: each block's
logits are kept from forward to backward and turned into the softmax gradient in place (PyTorch's
module keeps a log-softmax copy and builds a dense gradient of the gather), or, for a block of
more than ``max_chunk_elements`` logits, computed in bounded chunks and recomputed in backward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.bands import resolve_cutoffs
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost, cluster_cost
from bigvocab.outputs.functional import chunk_budget, chunked_logsumexp, chunked_topk
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_float


class _LinearLogProb(torch.autograd.Function):
    """log softmax(x W^T + b)[target] for x (N, d), W (V, d), b (V,) or None, target (N,): keeps the
    (N, V) logits for backward and reuses their memory for the gradient."""

    @staticmethod
    def forward(ctx, x, weight, bias, target):
        logits = x @ weight.t()
        if bias is not None:
            logits += bias
        log_z = torch.logsumexp(logits, 1)
        ctx.save_for_backward(x, weight, bias, target, logits, log_z)
        return logits.gather(1, target[:, None]).squeeze(1) - log_z

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias, target, logits, log_z = ctx.saved_tensors
        # d/d logits = g (onehot(target) - softmax); backward runs once, so the logits can be overwritten.
        grad_logits = torch.exp_(logits.sub_(log_z[:, None])).mul_(-grad[:, None])
        grad_logits[torch.arange(x.shape[0], device=x.device), target] += grad
        grad_x = grad_logits @ weight if ctx.needs_input_grad[0] else None
        grad_weight = grad_logits.t() @ x if ctx.needs_input_grad[1] else None
        grad_bias = grad_logits.sum(0) if bias is not None and ctx.needs_input_grad[2] else None
        return grad_x, grad_weight, grad_bias, None


@OUTPUTS.register("adaptive")
class AdaptiveSoftmax(OutputLayer):
    """Head softmax over the shortlist and cluster tokens, one reduced softmax per cluster.

    Args:
        in_features: H.
        num_classes: V.
        cutoffs: strictly increasing ids in [1, V - 1] where the head / clusters start; default from
            ``counts`` (or a Zipf law): the head holds 80% of the tokens, the first cluster up to 95%.
        div_value: cluster i projects h to ``int(H // div_value ** (i + 1))`` dimensions (at least 1).
        bias: a bias on the head (PyTorch's ``head_bias``; off by default, as there).
        counts: class frequencies, read only for the default cutoffs.
        max_chunk_elements: logits held at once (None: 2**24, 2**28 on CUDA, as in every layer). A block (the
            head, or a cluster's rows) within the budget keeps its logits from forward to backward,
            as PyTorch does; a larger one streams them in chunks and recomputes them in backward
            (about a third more matrix work). ``topk`` is always chunked.
        device, dtype: where the parameters are created.
    """

    retrieval_variants = {"": {}}

    topk_by_search = True

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        cutoffs: Sequence[int] | None = None,
        div_value: float = 4.0,
        bias: bool = False,
        counts=None,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        self.cutoffs = resolve_cutoffs(cutoffs, num_classes, counts, owner="adaptive")
        if not self.cutoffs:
            raise ConfigError("adaptive needs at least one cutoff; for a single softmax use the 'full' layer")
        self.div_value = check_positive_float("div_value", div_value)
        self.max_chunk_elements = max_chunk_elements
        self.edges = [*self.cutoffs, num_classes]
        self.shortlist_size = self.cutoffs[0]
        num_clusters = len(self.cutoffs)
        factory = {"device": device, "dtype": dtype}
        self.head = nn.Linear(in_features, self.shortlist_size + num_clusters, bias=bias, **factory)
        tails = []
        for i, (lo, hi) in enumerate(zip(self.edges, self.edges[1:])):
            # At least 1: PyTorch would build a 0-dimensional projection (a uniform cluster) there.
            projected = max(1, int(in_features // (self.div_value ** (i + 1))))
            tails.append(
                nn.Sequential(
                    nn.Linear(in_features, projected, bias=False, **factory),
                    nn.Linear(projected, hi - lo, bias=False, **factory),
                )
            )
        self.tail = nn.ModuleList(tails)

    def train_cost(self, target: Tensor) -> Cost:
        return cluster_cost(self.head, self.edges, self.tail, target, training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        return cluster_cost(self.head, self.edges, self.tail, target, training=False)

    def _clusters(self) -> list[tuple[nn.Linear, nn.Linear]]:
        """Every cluster's (projection H -> h_i, output h_i -> |V_i|): the two layers of ``tail[i]``."""
        # A ModuleList types its items as plain Modules; __init__ puts two nn.Linear in each.
        return [cast(tuple[nn.Linear, nn.Linear], tuple(cast(nn.Sequential, pair))) for pair in self.tail]

    def _cluster_of(self, target: Tensor) -> Tensor:
        """0 for shortlist ids, i + 1 for ids in cluster i."""
        return torch.bucketize(target, torch.tensor(self.cutoffs, device=target.device), right=True)

    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        cluster = self._cluster_of(target)
        head_target = torch.where(cluster == 0, target, self.shortlist_size + cluster - 1)
        log_p = self._block_log_prob(hidden, self.head.weight, self.head.bias, head_target)
        order = torch.argsort(cluster)
        counts = torch.bincount(cluster, minlength=len(self.edges)).tolist()
        start = counts[0]
        for i, (projection, _) in enumerate(self._clusters()):
            rows = order[start : start + counts[i + 1]]
            start += counts[i + 1]
            if rows.numel() == 0:
                continue
            local = target.index_select(0, rows) - self.edges[i]
            cluster_log_p = self._cluster_log_prob(i, projection(hidden.index_select(0, rows)), local)
            log_p = log_p.index_add(0, rows, cluster_log_p)
        return log_p

    # The three cluster hooks: what a vocabulary-parallel layer replaces (its cluster rows are split).
    def _cluster_log_prob(self, cluster: int, x: Tensor, target: Tensor) -> Tensor:
        """log p(target | cluster) for the projected states x (n, h_i), target ids within the cluster."""
        return self._block_log_prob(x, self._clusters()[cluster][1].weight, None, target)

    def _cluster_log_softmax(self, cluster: int, x: Tensor) -> Tensor:
        """(n, |V_i|) log-distribution within the cluster for the projected states x."""
        return torch.log_softmax(self._clusters()[cluster][1](x), dim=1)

    def _cluster_topk(self, cluster: int, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """The k best (log p within the cluster, ids within the cluster) for the projected states x."""
        output = self._clusters()[cluster][1]
        return chunked_topk(x, output.weight, None, k, max_chunk_elements=self.max_chunk_elements)

    def _block_log_prob(self, x: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor) -> Tensor:
        """log softmax(x W^T + b)[target], (N,)."""
        if x.shape[0] * weight.shape[0] <= chunk_budget(self.max_chunk_elements, x.device):
            return _LinearLogProb.apply(x, weight, bias, target)
        log_z, logit = chunked_logsumexp(x, weight, bias, target, max_chunk_elements=self.max_chunk_elements)
        return logit - log_z

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        # The same operations in the same order as PyTorch's module, so the values agree bit for bit.
        head_log_p = torch.log_softmax(self.head(hidden), dim=1)
        pieces = [head_log_p[:, : self.shortlist_size]]
        for i, (projection, _) in enumerate(self._clusters()):
            token = head_log_p[:, self.shortlist_size + i].unsqueeze(1)
            pieces.append(self._cluster_log_softmax(i, projection(hidden)) + token)
        return torch.cat(pieces, 1)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            n = hidden.shape[0]
            head_log_p = torch.log_softmax(self.head(hidden), dim=1)
            values = hidden.new_full((n, k), float("-inf"))
            ids = torch.zeros((n, k), dtype=torch.long, device=hidden.device)
            first = min(k, self.shortlist_size)
            values[:, :first], ids[:, :first] = head_log_p[:, : self.shortlist_size].topk(first, dim=1)
            for i, (projection, _) in enumerate(self._clusters()):
                # Every word of cluster i has log p <= log p(cluster i): skip rows it cannot improve.
                token = head_log_p[:, self.shortlist_size + i]
                rows = (token > values[:, k - 1]).nonzero().flatten()
                if rows.numel() == 0:
                    continue
                cluster_values, cluster_ids = self._cluster_topk(
                    i, projection(hidden[rows]), min(k, self.edges[i + 1] - self.edges[i])
                )
                merged = torch.cat([values[rows], cluster_values + token[rows, None]], 1)
                merged_ids = torch.cat([ids[rows], cluster_ids + self.edges[i]], 1)
                values[rows], where = merged.topk(k, dim=1)
                ids[rows] = merged_ids.gather(1, where)
            return values, ids

    def shard_vocabulary(self, group: Any, *, partition: Any = None) -> OutputLayer:
        """Head replicated, each tail cluster's output rows split evenly over ``group``
        (:class:`~bigvocab.outputs.parallel.adaptive.VocabParallelAdaptive`)."""
        from bigvocab.outputs.parallel.adaptive import (
            VocabParallelAdaptive,  # torch.distributed loads only when a layer is split
        )

        if partition is not None:
            raise ConfigError(
                "adaptive splits every cluster evenly over the ranks; partition= is for layers over linear rows"
            )
        return VocabParallelAdaptive(self, group)

    def extra_repr(self) -> str:
        return (
            super().extra_repr()
            + f", cutoffs={self.cutoffs}, div_value={self.div_value}, bias={self.head.bias is not None}"
        )
