"""The shared budgeted branch-and-bound top-k against brute force on an explicit random tree."""

from __future__ import annotations

import torch

from bigvocab.outputs import search


def random_tree(num_inner: int, num_leaves: int, num_queries: int, seed: int = 0):
    """A random tree whose nodes 1.. hang under earlier nodes, leaves under inner nodes, with
    per-query edge log-probabilities normalised over each node's children; and every leaf's
    log-probability by brute force, (Q, leaves)."""
    generator = torch.Generator().manual_seed(seed)
    parent = torch.cat([torch.tensor([-1]), torch.randint(0, num_inner, (num_inner - 1,), generator=generator)])
    parent[1:] = torch.minimum(parent[1:], torch.arange(num_inner - 1))  # parents come first
    leaf_parent = torch.randint(0, num_inner, (num_leaves,), generator=generator)
    # children of node p: inner nodes with parent p (ids) and leaves with parent p (num_inner + ids)
    child_parent = torch.cat([parent[1:], leaf_parent])
    child_id = torch.cat([torch.arange(1, num_inner), num_inner + torch.arange(num_leaves)])
    scores = 3 * torch.randn(num_queries, child_parent.shape[0], generator=generator, dtype=torch.float64)
    # Each node's children: a softmax over their scores (a node without children never comes up).
    peak = torch.full((num_queries, num_inner), float("-inf"), dtype=torch.float64)
    peak = peak.scatter_reduce(1, child_parent.expand(num_queries, -1), scores, "amax")
    total = torch.zeros(num_queries, num_inner, dtype=torch.float64)
    total.index_add_(1, child_parent, (scores - peak[:, child_parent]).exp())
    edge = scores - peak[:, child_parent] - total[:, child_parent].log()
    node_log_p = torch.zeros(num_queries, num_inner + num_leaves, dtype=torch.float64)
    for column in torch.argsort(child_id).tolist():  # parents before children
        node_log_p[:, child_id[column]] = node_log_p[:, child_parent[column]] + edge[:, column]
    return child_parent, child_id, edge, node_log_p[:, num_inner:]


def test_tree_topk_is_exact_and_falls_back_past_its_budget():
    num_inner, num_leaves, queries, k = 30, 200, 7, 5
    child_parent, child_id, edge, leaf_log_p = random_tree(num_inner, num_leaves, queries)
    expanded = []

    def expand(query, node, log_p, payload):
        match = child_parent[None] == node[:, None]  # (P, children)
        pair, column = match.nonzero(as_tuple=True)
        child = child_id[column]
        expanded.append(node.numel())
        return search.Children(
            pair, child, log_p[pair] + edge[query[pair], column], torch.where(child >= num_inner, child - num_inner, -1)
        )

    dense_rows = []

    def dense(rows):
        dense_rows.append(rows)
        return leaf_log_p[rows].topk(k, dim=1)

    expected_values, expected_ids = leaf_log_p.topk(k, dim=1)
    values, ids = search.tree_topk(
        queries, k, expand, dense, budget=10_000, dtype=torch.float64, device=torch.device("cpu")
    )
    torch.testing.assert_close(values, expected_values)
    assert torch.equal(ids, expected_ids) and not dense_rows
    # A budget too small for any query: every query is scored densely, still exactly.
    values, ids = search.tree_topk(queries, k, expand, dense, budget=1, dtype=torch.float64, device=torch.device("cpu"))
    assert torch.equal(ids, expected_ids) and dense_rows[-1].numel() == queries
