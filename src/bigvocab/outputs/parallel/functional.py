"""The linear softmax with its (V, H) rows split over ranks: exact log Z, scores, log-softmax, top-k.

Each rank holds ``weight`` (V_r, H) and ``bias`` (V_r,) for the classes ``[start, stop)`` of its
:class:`~bigvocab.distributed.groups.VocabShard`; ``hidden`` (N, H) is replicated. Every function
returns replicated results whose gradients reach the replicated ``hidden`` (summed over ranks) and
this rank's rows only.

* :func:`sharded_log_normaliser` -- the exact cross-entropy's two terms, ``(log Z, s_target)``.
  Each rank streams its own rows in chunks (:func:`~bigvocab.outputs.functional.chunked_logsumexp`,
  so no rank holds N x V_r logits at once) into its log Z_r; log Z = log Σ_r exp(log Z_r) comes
  from an all-reduce of the maximum and one of the sum of exponentials (the scheme of Megatron-LM's
  vocab-parallel cross-entropy, Shoeybi et al. 2019, applied to per-rank normalisers instead of
  per-rank logits so that the chunked pass stays one pass). The chain rule through that reduction scales each rank's
  softmax by exp(log Z_r - log Z), which is the hand-written backward of the chunked pass
  evaluated with the global normaliser.
  Per step: three all-reduces of N numbers forward, one of N x H backward.
* :func:`sharded_class_logits` -- scores of chosen candidates (sampled, noise, partition
  vocabularies): each rank scores the candidates it owns, zero elsewhere, and one all-reduce of the
  (N, M) scores makes them whole. Every sampling objective is written against this, so with the
  same draws on every rank (same seed) its estimate equals the one-process estimate.
* :func:`sharded_logits` -- all (N, V) logits, gathered (for ``log_softmax`` on small V).
* :func:`sharded_topk` -- exact top-k: each rank's top-k, scored against the global log Z, merged.
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.distributed.groups import (
    VocabShard,
    all_gather_cat,
    copy_to_shards,
    gather_shards,
    logsumexp_over_shards,
    sum_over_shards,
)
from bigvocab.outputs.functional import chunked_logsumexp, chunked_topk, gather_rows


def _local_ids(ids: Tensor, shard: VocabShard) -> tuple[Tensor, Tensor]:
    """Class ids as row indices into this rank's shard (clamped where another rank owns them) and
    the bool mask of the ones this rank owns."""
    local = ids - shard.start
    owned = (local >= 0) & (local < shard.size)
    return local.clamp(0, shard.size - 1), owned


def sharded_log_normaliser(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    target: Tensor,
    shard: VocabShard,
    *,
    max_chunk_elements: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Exact ``(log Z, s_target)``, (N,) each, over all V classes: hidden (N, H) replicated,
    weight (V_r, H) / bias (V_r,) this rank's rows, target (N,) global ids. Memory per rank: one
    (N, chunk) block of logits beyond the rows and their gradient."""
    hidden = copy_to_shards(hidden, shard.group)
    local_target, owned = _local_ids(target, shard)
    local_log_z, local_target_logit = chunked_logsumexp(
        hidden, weight, bias, local_target, max_chunk_elements=max_chunk_elements
    )
    log_z = logsumexp_over_shards(local_log_z, shard.group)
    target_logit = sum_over_shards(torch.where(owned, local_target_logit, 0.0), shard.group)
    return log_z, target_logit


def sharded_class_logits(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    ids: Tensor,
    shard: VocabShard,
    *,
    sparse: bool,
) -> Tensor:
    """Scores of the classes ``ids``: (M,) shared by every row -> (N, M), or (N, M) one set per row
    -> (N, M). Each rank computes only the scores of the ids it owns; with ``sparse`` the gradient
    of its rows is a sparse tensor holding just those rows (a sparse optimiser then updates nothing
    else, exactly as in one process)."""
    hidden = copy_to_shards(hidden, shard.group)
    flat_local, flat_owned = _local_ids(ids.reshape(-1), shard)
    # Host sync (nonzero): the owned count decides the shapes, and scoring only owned rows keeps
    # the other ranks' classes out of this rank's (sparse) gradient.
    position = flat_owned.nonzero().squeeze(1)
    rows_ids = flat_local.index_select(0, position)
    rows = gather_rows(weight, rows_ids, sparse=sparse)
    row_bias = gather_rows(bias, rows_ids, sparse=sparse) if bias is not None else None
    if ids.dim() == 1:
        owned_scores = hidden @ rows.t()
        if row_bias is not None:
            owned_scores = owned_scores + row_bias
        scores = hidden.new_zeros(hidden.shape[0], ids.shape[0]).index_copy(1, position, owned_scores)
    else:
        owned_scores = (hidden.index_select(0, position // ids.shape[1]) * rows).sum(1)
        if row_bias is not None:
            owned_scores = owned_scores + row_bias
        scores = hidden.new_zeros(ids.numel()).index_copy(0, position, owned_scores).reshape(ids.shape)
    return sum_over_shards(scores, shard.group)


def sharded_logits(hidden: Tensor, weight: Tensor, bias: Tensor | None, shard: VocabShard) -> Tensor:
    """All (N, V) logits, gathered in class order on every rank; for small V only."""
    hidden = copy_to_shards(hidden, shard.group)
    local = hidden @ weight.t()
    if bias is not None:
        local = local + bias
    return gather_shards(local, shard)


def sharded_topk(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    k: int,
    shard: VocabShard,
    *,
    max_chunk_elements: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Exact top-k (log-probs, global ids), (N, k) each, best first. Each rank's k best are a
    superset of its share of the global k best, so merging the P local lists is exact. Per call:
    two all-reduces of N numbers and two all-gathers of N x k."""
    with torch.no_grad():
        local_k = min(k, shard.size)
        # Log-probs within this rank's classes, then rescaled to the whole vocabulary.
        values, ids = chunked_topk(hidden, weight, bias, local_k, max_chunk_elements=max_chunk_elements)
        local_log_z, _ = chunked_logsumexp(
            hidden,
            weight,
            bias,
            hidden.new_zeros(hidden.shape[0], dtype=torch.long),
            max_chunk_elements=max_chunk_elements,
        )
        log_z = logsumexp_over_shards(local_log_z, shard.group)
        values = values + (local_log_z - log_z).unsqueeze(1)
        ids = ids + shard.start
        if local_k < k:  # a shard smaller than k: pad so every rank sends the same shape
            values = torch.cat([values, values.new_full((values.shape[0], k - local_k), float("-inf"))], dim=1)
            ids = torch.cat([ids, ids.new_full((ids.shape[0], k - local_k), -1)], dim=1)
        all_values = all_gather_cat(values, shard.group, dim=1)
        all_ids = all_gather_cat(ids, shard.group, dim=1)
        best, order = all_values.topk(k, dim=1)
        return best, all_ids.gather(1, order)
