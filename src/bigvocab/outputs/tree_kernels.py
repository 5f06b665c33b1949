"""The exact distribution of a binary hierarchical softmax, compiled with numba (``nogil``).

For a binary tree (Morin & Bengio 2005; word2vec's Huffman tree, Mikolov et al. 2013) a node with
logit x sends its children log σ(-x) (position 0) and log σ(x) = log σ(-x) + x (position 1), and
a leaf's log-probability is the sum of the decisions on its path. One top-down pass over the
nodes, parents before children, therefore gives every leaf: each node adds its decision to its
parent's prefix once, O(V) additions per example, instead of one gather and one scatter per
tree level. The log-sigmoids (the only transcendental work) are taken beforehand by torch, whose
exp and log are vectorised; numba here has scalar libm calls only.

Rows are independent, so :func:`binary_leaf_log_probs` splits them over plain Python threads:
the kernel releases the GIL, so they run at once.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.outputs.kernel_threads import run_in_ranges
from bigvocab.word2vec.kernels import FAST


@njit(nogil=True, cache=True, fastmath=FAST)
def _top_down(
    logits: np.ndarray, softplus: np.ndarray, children: np.ndarray, out: np.ndarray, lo: int, hi: int
) -> None:
    """Rows lo:hi of ``out`` (n, V) from node logits (n, V - 1), their softplus(x) = -log σ(-x)
    (n, V - 1) and children (V - 1, 2) as unified ids (internal nodes < V - 1 <= leaves), nodes in
    an order that puts every parent before its children."""
    num_nodes = logits.shape[1]
    prefix = np.empty(num_nodes, dtype=out.dtype)  # log p(node) of the row being walked
    for row in range(lo, hi):
        prefix[0] = 0.0
        for node in range(num_nodes):
            left = prefix[node] - softplus[row, node]
            right = left + logits[row, node]
            first, second = children[node, 0], children[node, 1]
            if first >= num_nodes:
                out[row, first - num_nodes] = left
            else:
                prefix[first] = left
            if second >= num_nodes:
                out[row, second - num_nodes] = right
            else:
                prefix[second] = right


def binary_leaf_log_probs(
    logits: Tensor,
    children: Tensor,
    *,
    threads: int,
    out: Optional[Tensor] = None,
    scratch: Optional[Tensor] = None,
) -> Tensor:
    """(n, V - 1) node logits of a binary tree whose nodes are numbered parents first, and its
    (V - 1, 2) children as unified ids (nodes, then leaves) -> (n, V) leaf log-probabilities.

    CPU float tensors; ``threads`` Python threads take contiguous row ranges. ``out`` (n, V) and
    ``scratch`` (n, V - 1), contiguous, receive the result and the softplus of the logits when
    given: a caller that walks row chunks passes the same buffers every time, since at V = 1M a
    fresh buffer per chunk cost more in page faults than the pass itself.
    """
    logits = logits.contiguous()
    n, num_nodes = logits.shape
    if out is None:
        out = logits.new_empty(n, num_nodes + 1)
    if scratch is None:
        scratch = torch.empty_like(logits)
    # log σ(-x) = -softplus(x), which torch computes about 1.7x faster than logsigmoid on CPU; the
    # kernel subtracts it, which spares a pass negating the (n, V - 1) buffer. Above the threshold
    # softplus returns x, off by e^-40, below float64's resolution there.
    softplus = torch.ops.aten.softplus.out(logits, 1, 40.0, out=scratch)
    arrays = (logits.numpy(), softplus.numpy(), children.contiguous().numpy(), out.numpy())
    # A node's visit (two loads, two stores, two additions) weighs as two multiply-adds of the
    # pair kernels: at V = 1M two threads paid from 16 rows on (1.25x), not at 4 (0.98x)
    # (results/kernel-threads/tree_pass_threads.py).
    run_in_ranges(_top_down, arrays, n, threads, work_per_item=2 * num_nodes)
    return out
