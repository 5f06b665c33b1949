"""Exact top-k over a tree of log-probabilities by budgeted branch and bound.

``hsm`` (Morin & Bengio 2005) and ``char`` (Jozefowicz et al. 2016) give each class the
log-probability of a path from a root, a sum of non-positive steps, so a node's log-probability
bounds every class below it. :func:`tree_topk` finds the exact k best classes of each query in two
passes over a frontier of (query, node) items, batched across queries:

1. a beam of width k per query (the k best inner nodes of each round) collects classes whose k-th
   best log-probability L is a lower bound on the true k-th best;
2. a branch-and-bound pass expands only the nodes with log-probability >= L (those best-first
   search would also expand, up to the ones between L and the true k-th).

A query that would expand more than ``budget`` nodes (a flat distribution, e.g. an untrained
model, prunes little) or that found fewer than k classes is answered by the layer's dense scorer.
The layer supplies the tree through two callbacks, so one search serves a tree of learned
decisions (``hsm``) and a trie walked by a recurrent decoder whose state rides on each item
(``char``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from bigvocab.index.ragged import ragged_topk


@dataclass
class Children:
    """What expanding a frontier of P items gives, one entry per child (C entries).

    pair: (C,) the frontier item each child comes from; node: (C,) the child's node id (ignored
    for a class); log_p: (C,) its log-probability; word: (C,) the class a child finishes, or -1
    for an inner node to expand further.
    """

    pair: Tensor
    node: Tensor
    log_p: Tensor
    word: Tensor


#: (query (P,), node (P,), log_p (P,), payload or None) -> the children of those P items.
Expand = Callable[[Tensor, Tensor, Tensor, Tensor | None], Children]
#: (parent payload (C',), query (C',), child node (C',)) -> the payload of those kept children.
Advance = Callable[[Tensor, Tensor, Tensor], Tensor]


@dataclass
class SearchResult:
    """values, ids: (N, k) best first, -inf / -1 past what was found; found: (N,) classes kept;
    spent: (N,) items expanded."""

    values: Tensor
    ids: Tensor
    found: Tensor
    spent: Tensor


def tree_topk(
    num_queries: int,
    k: int,
    expand: Expand,
    dense_topk: Callable[[Tensor], tuple[Tensor, Tensor]],
    *,
    budget: int,
    dtype: torch.dtype,
    device: torch.device,
    payload: Tensor | None = None,
    advance: Advance | None = None,
) -> tuple[Tensor, Tensor]:
    """Exact (values, ids), each (N, k), of the k best classes of N queries whose trees start at
    node 0 with log-probability 0. ``payload`` (N, ...) is carried per item and ``advance``
    makes a child's from its parent's (both or neither); ``dense_topk(rows)`` scores the queries
    ``rows`` in full."""
    beam = frontier_search(
        num_queries, k, expand, budget=budget, dtype=dtype, device=device, payload=payload, advance=advance
    )
    bound = beam.values[:, k - 1]
    # Slack for rounding: the classes that set the bound must pass again; extra nodes cost time only.
    bound = bound - 64 * torch.finfo(dtype).eps * (1 + bound.abs())
    result = frontier_search(
        num_queries, k, expand, budget=budget, dtype=dtype, device=device, payload=payload, advance=advance, bound=bound
    )
    dense = ((result.found < k) | (result.spent > budget)).nonzero().flatten()
    if dense.numel():
        result.values[dense], result.ids[dense] = dense_topk(dense)
    return result.values, result.ids


def frontier_search(
    num_queries: int,
    k: int,
    expand: Expand,
    *,
    budget: int,
    dtype: torch.dtype,
    device: torch.device,
    payload: Tensor | None = None,
    advance: Advance | None = None,
    bound: Tensor | None = None,
) -> SearchResult:
    """Expand every query's tree from the root, round by round, keeping an inner child only if it
    is among its query's k best of the round (no ``bound``: the beam) or its log-probability is
    at least ``bound`` (N,), which then also filters the classes. A query stops being expanded
    once it has spent ``budget`` items."""
    query = torch.arange(num_queries, device=device)
    node = torch.zeros(num_queries, dtype=torch.long, device=device)
    log_p = torch.zeros(num_queries, dtype=dtype, device=device)
    spent = torch.zeros(num_queries, dtype=torch.long, device=device)
    found_query, found_word, found_log_p = [], [], []
    while query.numel():
        spent += torch.bincount(query, minlength=num_queries)
        within = (spent[query] <= budget).nonzero().flatten()
        query, node, log_p = query[within], node[within], log_p[within]
        payload = payload[within] if payload is not None else None
        children = expand(query, node, log_p, payload)
        child_query = query[children.pair]
        finished = children.word >= 0
        passes = children.log_p >= bound[child_query] if bound is not None else torch.ones_like(finished)
        found = finished & passes
        found_query.append(child_query[found])
        found_word.append(children.word[found])
        found_log_p.append(children.log_p[found])
        if bound is None:
            inner = (~finished).nonzero().flatten()
            _, best, _ = ragged_topk(child_query[inner], inner, children.log_p[inner], num_queries, k)
            chosen = best[best >= 0]
        else:
            chosen = (~finished & passes).nonzero().flatten()
        pair = children.pair[chosen]
        query, node, log_p = child_query[chosen], children.node[chosen], children.log_p[chosen]
        if advance is not None and payload is not None:
            payload = advance(payload[pair], query, node)
    values, ids, found_count = ragged_topk(
        torch.cat(found_query), torch.cat(found_word), torch.cat(found_log_p), num_queries, k
    )
    return SearchResult(values, ids, found_count, spent)
