"""The exact distribution of a binary hierarchical softmax, compiled with numba (``nogil``).

For a binary tree (Morin & Bengio 2005; word2vec's Huffman tree, Mikolov et al. 2013) a node with
logit x sends its children log σ(-x) = -softplus(x) (position 0) and log σ(x) = log σ(-x) + x
(position 1), and a leaf's log-probability is the sum of the decisions on its path. One top-down
pass over the nodes, parents before children, therefore gives every leaf: each node adds its
decision to its parent's prefix once, O(V) additions per example, instead of one gather and one
scatter per tree level.

The softplus is the only transcendental work. For float32 the pass takes it row by row in a
loop LLVM vectorises (:func:`_softplus_float32`; numba here has no vector exp or log), so the
row's softplus stays in cache and no (n, V - 1) buffer is written and read back; float64 rows
take torch's softplus beforehand.

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

_LOG2_E = np.float32(1.4426950408889634)
# ln 2 split so that k * _LN2_HIGH is exact for the k used here (Cody & Waite 1980).
_LN2_HIGH = np.float32(0.693359375)
_LN2_LOW = np.float32(-2.12194440e-4)
# e^-87 is near float32's smallest normal number: beyond it softplus(x) is x, or 0 for x < 0.
_EXP_ARGUMENT_MAX = np.float32(87.0)

#: Elements a row of node logits is padded to a multiple of (64 bytes of float32).
ROW_ALIGNMENT = 16


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _softplus_float32(x: np.ndarray, out: np.ndarray, bits: np.ndarray) -> None:
    """``out`` = softplus(x) = max(x, 0) + log1p(e^-|x|) for float32 vectors (m,), ``bits`` (m,)
    int32 scratch; NaN stays NaN and ±inf gives inf / 0.

    Written for LLVM's vectoriser: e^-a = 2^-k e^r with k = round(a / ln 2) and r = k ln 2 - a in
    [-ln 2 / 2, ln 2 / 2], e^r by its Taylor polynomial of degree 7 (truncation under 6e-9
    relative), 2^-k written as a float's exponent field; log1p(y) = 2 atanh(y / (2 + y)), whose
    odd series in z = y / (2 + y) <= 1/3 is cut after 8 terms (under 2e-9 relative). Within 4
    float32 ulp of float64 softplus (tests/outputs/test_tree_kernels.py; measured at most 2.9,
    torch's float32 softplus 1.4); numba's Python error model is off, since its division-by-zero
    check stops the loop from vectorising (it then ran 4x slower), and so did cutting the loops
    into strips."""
    scale = bits.view(np.float32)
    for i in range(x.shape[0]):
        a = abs(x[i])
        a = a if a < _EXP_ARGUMENT_MAX else _EXP_ARGUMENT_MAX  # NaN too: max(x, 0) below keeps it
        k = np.int32(a * _LOG2_E + np.float32(0.5))
        kf = np.float32(k)
        r = (kf * _LN2_HIGH - a) + kf * _LN2_LOW
        p = np.float32(1 / 5040)
        p = p * r + np.float32(1 / 720)
        p = p * r + np.float32(1 / 120)
        p = p * r + np.float32(1 / 24)
        p = p * r + np.float32(1 / 6)
        p = p * r + np.float32(0.5)
        p = p * r + np.float32(1.0)
        out[i] = p * r + np.float32(1.0)
        bits[i] = (np.int32(127) - k) << 23  # 2^-k: k <= 126, so the exponent field stays >= 1
    for i in range(x.shape[0]):
        y = out[i] * scale[i]
        z = y / (np.float32(2.0) + y)
        z2 = z * z
        q = np.float32(1 / 15)
        q = q * z2 + np.float32(1 / 13)
        q = q * z2 + np.float32(1 / 11)
        q = q * z2 + np.float32(1 / 9)
        q = q * z2 + np.float32(1 / 7)
        q = q * z2 + np.float32(1 / 5)
        q = q * z2 + np.float32(1 / 3)
        q = q * z2 + np.float32(1.0)
        xi = x[i]
        out[i] = (np.float32(0.0) if xi <= np.float32(0.0) else xi) + np.float32(2.0) * z * q


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _top_down(
    logits: np.ndarray, softplus: np.ndarray, children: np.ndarray, out: np.ndarray, lo: int, hi: int
) -> None:
    """Rows lo:hi of ``out`` (n, V) from node logits (n, >= V - 1: columns past the nodes are
    padding, not read), their softplus(x) = -log σ(-x) (n, V - 1; with no rows: taken here,
    float32 only) and children (V - 1, 2) as unified ids (internal nodes < V - 1 <= leaves), nodes
    in an order that puts every parent before its children."""
    num_nodes = children.shape[0]
    prefix = np.empty(num_nodes, dtype=out.dtype)  # log p(node) of the row being walked
    row_softplus = np.empty(num_nodes, dtype=out.dtype)
    bits = np.empty(num_nodes, dtype=np.int32)
    for row in range(lo, hi):
        if softplus.shape[0] == 0:
            _softplus_float32(logits[row, :num_nodes], row_softplus, bits)
        else:
            row_softplus[:] = softplus[row]
        prefix[0] = 0.0
        for node in range(num_nodes):
            left = prefix[node] - row_softplus[node]
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


def aligned_width(num_nodes: int) -> int:
    """Columns of a node-logits buffer for ``num_nodes`` nodes: rounded up to a multiple of
    :data:`ROW_ALIGNMENT`. A tree has V - 1 nodes, an odd count at every round V, and a product
    written into rows of odd length ran 1.2-1.75x slower than into the same rows padded (H = 256,
    V - 1 = 9,999 and 99,999, 41-1024 rows; results/hsm-aligned-logits)."""
    return -(-num_nodes // ROW_ALIGNMENT) * ROW_ALIGNMENT


def softplus_scratch(logits: Tensor) -> Optional[Tensor]:
    """The (n, V - 1) buffer :func:`binary_leaf_log_probs` needs for these logits' softplus, or
    None where the pass takes it row by row (float32)."""
    return None if logits.dtype == torch.float32 else torch.empty_like(logits)


def binary_leaf_log_probs(
    logits: Tensor,
    children: Tensor,
    *,
    threads: int,
    out: Optional[Tensor] = None,
    scratch: Optional[Tensor] = None,
) -> Tensor:
    """(n, W) node logits of a binary tree whose V - 1 <= W nodes are numbered parents first,
    and its (V - 1, 2) children as unified ids (nodes, then leaves) -> (n, V) leaf
    log-probabilities. Columns past the V - 1 nodes are padding and are not read: a caller may
    give each row a width that keeps the product's rows aligned (:func:`aligned_width`).

    CPU float tensors; ``threads`` Python threads take contiguous row ranges. ``out`` (n, V)
    receives the result when given, and ``scratch`` (n, V - 1) the softplus of the logits where
    :func:`softplus_scratch` says one is needed: a caller that walks row chunks passes the same
    buffers every time, since at V = 1M a fresh buffer per chunk cost more in page faults than
    the pass itself.
    """
    logits = logits.contiguous()
    n, num_nodes = logits.shape[0], children.shape[0]
    if logits.shape[1] < num_nodes:
        raise ValueError(f"{num_nodes} nodes need logits of at least {num_nodes} columns, got {logits.shape[1]}")
    if out is None:
        out = logits.new_empty(n, num_nodes + 1)
    if logits.dtype == torch.float32:
        softplus = logits.new_empty(0, num_nodes)
    else:
        # Above the threshold torch's softplus returns x, off by e^-40, below float64's
        # resolution there.
        buffer = softplus_scratch(logits[:, :num_nodes]) if scratch is None else scratch
        softplus = torch.ops.aten.softplus.out(logits[:, :num_nodes], 1, 40.0, out=buffer)
    arrays = (logits.numpy(), softplus.numpy(), children.contiguous().numpy(), out.numpy())
    # With its softplus a node weighs as 64 multiply-adds of the pair kernels, so two threads
    # take 2^18 nodes or more: they ran 1.2-1.3x faster than one at 16 rows of V = 10k (160k
    # nodes), 1.6-1.7x at 64, 1.8-1.9x at 4 rows of V = 1M (results/hsm-fused-softplus/threads.log).
    # Without the softplus inside, the pass paid at 16 rows of V = 1M, not at 4
    # (results/kernel-threads).
    run_in_ranges(_top_down, arrays, n, threads, work_per_item=64 * num_nodes)
    return out
