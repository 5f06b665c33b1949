"""The exact distribution of a hierarchical softmax, compiled with numba (``nogil``).

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

A tree of any arity (Goodman 2001's two-level classes, a user's tree) takes the same top-down
pass with a softmax per node over its reference child (logit 0) and its scored children
(:func:`general_leaf_log_probs`, float32), its exponentials from the same vectorised
polynomial (:func:`_exp_minus_abs_float32`).

Rows are independent, so both passes split them over plain Python threads: the kernels release
the GIL, so they run at once.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from bigvocab.kernels.flags import FAST
from bigvocab.kernels.library import define
from bigvocab.kernels.threads import run_in_ranges

_LOG2_E = np.float32(1.4426950408889634)
# ln 2 split so that k * _LN2_HIGH is exact for the k used here (Cody & Waite 1980).
_LN2_HIGH = np.float32(0.693359375)
_LN2_LOW = np.float32(-2.12194440e-4)
# e^-87 is near float32's smallest normal number: beyond it softplus(x) is x, or 0 for x < 0.
_EXP_ARGUMENT_MAX = np.float32(87.0)

#: Elements a row of node logits is padded to a multiple of (64 bytes of float32).
ROW_ALIGNMENT = 16


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _exp_minus_abs_float32(x: np.ndarray, shift: float, out: np.ndarray, bits: np.ndarray) -> None:
    """e^-|x - shift| for float32 vectors x (m,) in two factors: ``out`` (m,) times ``bits`` (m,)
    int32 read as float32 (2^-k). Arguments beyond 87, and NaN, are taken as 87 (e^-87 is near
    float32's smallest normal number); callers that must keep NaN check for it themselves.

    Written for LLVM's vectoriser: e^-a = 2^-k e^r with k = round(a / ln 2) and r = k ln 2 - a in
    [-ln 2 / 2, ln 2 / 2], e^r by its Taylor polynomial of degree 7 (truncation under 6e-9
    relative), 2^-k written as a float's exponent field; the caller multiplies the factors in
    its own loop. ``x`` and ``out`` must be different arrays: LLVM runs a loop whose input and
    output may overlap without its vector form."""
    for i in range(x.shape[0]):
        a = abs(x[i] - shift)
        a = a if a < _EXP_ARGUMENT_MAX else _EXP_ARGUMENT_MAX
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


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _softplus_float32(x: np.ndarray, out: np.ndarray, bits: np.ndarray) -> None:
    """``out`` = softplus(x) = max(x, 0) + log1p(e^-|x|) for float32 vectors (m,), ``bits`` (m,)
    int32 scratch; NaN stays NaN and ±inf gives inf / 0.

    e^-|x| from :func:`_exp_minus_abs_float32`; log1p(y) = 2 atanh(y / (2 + y)), whose odd series
    in z = y / (2 + y) <= 1/3 is cut after 8 terms (under 2e-9 relative). Within 4 float32 ulp of
    float64 softplus (tests/kernels/test_tree_kernels.py; measured at most 2.9, torch's float32
    softplus 1.4); numba's Python error model is off, since its division-by-zero check stops the
    loop from vectorising (it then ran 4x slower), and so did cutting the loops into strips."""
    _exp_minus_abs_float32(x, np.float32(0.0), out, bits)
    scale = bits.view(np.float32)
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


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _general_top_down(
    logits: np.ndarray,
    children: np.ndarray,
    child_offsets: np.ndarray,
    leaf_runs: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """Rows lo:hi of ``out`` (n, V) from float32 child logits (n, >= V - 1) of a tree of any
    arity: internal node m (numbered parents first) has children ``children[child_offsets[m]:
    child_offsets[m + 1]]`` (unified ids, internal nodes < M <= leaves), the first its reference
    child (logit 0), the others scored by the contiguous logit columns from child_offsets[m] - m.

    Per node: log Z = log(1 + sum of exp(logits)) over its children, shifted by the largest logit
    (or 0); each child then gets its parent's log-probability + its logit - log Z. A node whose
    children are leaves with consecutive ids (``leaf_runs``, :meth:`Tree.leaf_runs
    <bigvocab.outputs.trees.Tree.leaf_runs>`: their first leaf, else -1) writes them in one
    straight loop, without a look-up and a branch per child: that loop took 1.2 ns a child, 43% of
    the pass (``docs/design/hsm-log-softmax.md``)."""
    num_nodes = child_offsets.shape[0] - 1
    widest = 0
    for node in range(num_nodes):
        widest = max(widest, child_offsets[node + 1] - child_offsets[node] - 1)
    prefix = np.empty(num_nodes, dtype=np.float32)  # log p(node) of the row being walked
    factor = np.empty(widest, dtype=np.float32)
    bits = np.empty(widest, dtype=np.int32)
    scale = bits.view(np.float32)
    for row in range(lo, hi):
        prefix[0] = 0.0
        for node in range(num_nodes):
            first = child_offsets[node]
            width = child_offsets[node + 1] - first - 1
            column = first - node
            segment = logits[row, column : column + width]
            peak = np.float32(0.0)
            check = np.float32(0.0)  # NaN if a logit is (the exp below takes NaN as -87)
            for j in range(width):
                peak = segment[j] if segment[j] > peak else peak
                check += segment[j]
            _exp_minus_abs_float32(segment, peak, factor[:width], bits[:width])
            total = np.float32(np.exp(-peak))
            for j in range(width):
                total += factor[j] * scale[j]
            # As torch's log-sum-exp: NaN for a NaN logit, and for +inf (inf - inf).
            finite = check == check and peak != np.inf
            log_z = peak + np.float32(np.log(total)) if finite else np.float32(np.nan)
            base = prefix[node] - log_z
            leaf = leaf_runs[node]
            if leaf >= 0:
                out[row, leaf] = base
                for j in range(width):
                    out[row, leaf + 1 + j] = base + segment[j]
                continue
            for j in range(width + 1):
                value = base if j == 0 else base + segment[j - 1]
                child = children[first + j]
                if child >= num_nodes:
                    out[row, child - num_nodes] = value
                else:
                    prefix[child] = value


def aligned_width(num_nodes: int) -> int:
    """Columns of a node-logits buffer for ``num_nodes`` nodes: rounded up to a multiple of
    :data:`ROW_ALIGNMENT`. A tree has V - 1 nodes, an odd count at every round V, and a product
    written into rows of odd length ran 1.2-1.75x slower than into the same rows padded (H = 256,
    V - 1 = 9,999 and 99,999, 41-1024 rows; ``docs/design/hsm-log-softmax.md``)."""
    return -(-num_nodes // ROW_ALIGNMENT) * ROW_ALIGNMENT


def softplus_scratch(logits: Tensor) -> Tensor | None:
    """The (n, V - 1) buffer :func:`binary_leaf_log_probs` needs for these logits' softplus, or
    None where the pass takes it row by row (float32)."""
    return None if logits.dtype == torch.float32 else torch.empty_like(logits)


def binary_leaf_log_probs(
    logits: Tensor,
    children: Tensor,
    *,
    threads: int,
    out: Tensor | None = None,
    scratch: Tensor | None = None,
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
    _binary_pass(logits, softplus, children.contiguous(), out, threads)
    return out


def _binary_pass_kernel(logits: Tensor, softplus: Tensor, children: Tensor, out: Tensor, threads: int) -> None:
    arrays = (logits.numpy(), softplus.numpy(), children.numpy(), out.numpy())
    # With its softplus a node weighs as 64 multiply-adds of the pair kernels, so two threads
    # take 2^18 nodes or more: they ran 1.2-1.3x faster than one at 16 rows of V = 10k (160k
    # nodes), 1.6-1.7x at 64, 1.8-1.9x at 4 rows of V = 1M (``docs/design/hsm-log-softmax.md``).
    # Without the softplus inside, the pass paid at 16 rows of V = 1M, not at 4
    # (``docs/design/kernel-threads.md``).
    run_in_ranges(_top_down, arrays, out.shape[0], threads, work_per_item=64 * children.shape[0])


def _binary_pass_fake(logits: Tensor, softplus: Tensor, children: Tensor, out: Tensor, threads: int) -> None:
    return None


#: :func:`_top_down` over all n rows of ``out`` (n, V), written in place, on ``threads`` threads.
_binary_pass = define(
    "binary_tree_pass(Tensor logits, Tensor softplus, Tensor children, Tensor(a!) out, int threads) -> ()",
    _binary_pass_kernel,
    _binary_pass_fake,
)


def general_leaf_log_probs(
    logits: Tensor,
    children: Tensor,
    child_offsets: Tensor,
    leaf_runs: Tensor,
    *,
    threads: int,
    out: Tensor | None = None,
) -> Tensor:
    """(n, W) float32 child logits of a tree of any arity, V - 1 <= W columns (the rest padding,
    not read), its (M + V - 1,) children as unified ids, (M + 1,) child offsets and (M,) leaf runs
    (:class:`~bigvocab.outputs.trees.Tree`'s arrays, its :meth:`~bigvocab.outputs.trees.Tree.leaf_runs`
    computed once per tree rather than by an O(V) loop in every call on every thread) -> (n, V)
    leaf log-probabilities, into ``out`` when given. CPU tensors; ``threads``
    Python threads take contiguous row ranges."""
    if logits.dtype != torch.float32:
        raise TypeError(f"the compiled pass of a general tree takes float32 logits, got {logits.dtype}")
    logits = logits.contiguous()
    num_nodes = child_offsets.shape[0] - 1
    num_leaves = children.shape[0] - num_nodes + 1
    if logits.shape[1] < num_leaves - 1:
        raise ValueError(f"{num_leaves - 1} child logits need at least that many columns, got {logits.shape[1]}")
    if out is None:
        out = logits.new_empty(logits.shape[0], num_leaves)
    _general_pass(logits, children.contiguous(), child_offsets.contiguous(), leaf_runs.contiguous(), out, threads)
    return out


def _general_pass_kernel(
    logits: Tensor, children: Tensor, child_offsets: Tensor, leaf_runs: Tensor, out: Tensor, threads: int
) -> None:
    arrays = (logits.numpy(), children.numpy(), child_offsets.numpy(), leaf_runs.numpy(), out.numpy())
    # An exp a logit, as the binary pass's softplus a node: the same weight for the thread split.
    run_in_ranges(_general_top_down, arrays, out.shape[0], threads, work_per_item=64 * (out.shape[1] - 1))


def _general_pass_fake(
    logits: Tensor, children: Tensor, child_offsets: Tensor, leaf_runs: Tensor, out: Tensor, threads: int
) -> None:
    return None


#: :func:`_general_top_down` over all n rows of ``out`` (n, V), written in place, on ``threads`` threads.
_general_pass = define(
    "general_tree_pass(Tensor logits, Tensor children, Tensor child_offsets, Tensor leaf_runs, Tensor(a!) out, "
    "int threads) -> ()",
    _general_pass_kernel,
    _general_pass_fake,
)
