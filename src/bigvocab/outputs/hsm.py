"""``hsm`` -- hierarchical softmax (Morin & Bengio 2005; Mikolov et al. 2013; Goodman 2001).

Each class is a leaf of a tree (:mod:`bigvocab.outputs.trees`); p(w | h) is the product of the
decisions on the path from the root to w. A node with children c_0..c_{a-1} takes the decision
softmax_j(s_j) with s_0 = 0 and s_j = h . u_j + b_j for j >= 1: the first child is the reference,
so a binary node is the sigmoid of one vector (word2vec's ``syn1``) and a node with a children owns
a - 1 vectors. Any tree with V leaves then has exactly V - 1 vectors, and n-ary nodes (the class
tree) are exact softmaxes over their children, with the same expressive power as a vector per child.

Costs per example: training and ``log_prob`` touch only the vectors of the nodes on the target's
path (sum of (arity - 1) along it: about log2 V for a Huffman tree, the sizes of the root and of one
class for the class tree), with sparse gradients. The paths of a batch are found by walking up from
the target leaves, one level per step, into flat (example, node, position) lists (no padding); each
touched row is gathered once and the dot products are taken in cache-sized chunks.
``log_softmax`` is exact and costs O(V H), computed top-down one tree level at a time.
``topk`` is exact: a node's log-probability bounds every leaf below it, so a beam search gives k
leaves whose k-th log-probability L is a lower bound on the true k-th, and a branch-and-bound pass
then visits only the nodes with log-probability >= L (the ones best-first search would also
visit, up to those between L and the true k-th). When the distribution is so flat (an untrained
model) that a query would expand more than ``search_budget`` nodes, that query is scored in full.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost, dot_cost, hidden_cost
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX, EngineTables
from bigvocab.outputs.functional import (
    DEFAULT_CHUNK_ELEMENTS,
    distinct_ids,
    example_logits,
    gather_rows,
    pairs_compiled,
    row_pair_dots,
)
from bigvocab.outputs.search import Children, tree_topk
from bigvocab.outputs.trees import Tree, build_tree, segment_ranges, tree_side_inputs
from bigvocab.registry import OUTPUTS, TREES
from bigvocab.validation import check_flag, check_positive_int

_TREE_STATE = ("node_parent", "node_position", "leaf_parent", "leaf_position")


#: Gathered rows per chunk of :class:`_PairDots`: small enough to stay in the CPU cache, which made
#: the gathers about 10x faster than one big gather at V = 1M, H = 256.
_CACHE_ELEMENTS = 1 << 20

#: Fewest rows per chunk of the exact ``log_softmax``.
_MIN_ROWS = 16


class _PairDots(torch.autograd.Function):
    """``out[i] = left[left_ids[i]] . right[right_ids[i]]`` in chunks of pairs, without keeping the
    gathered (pairs, H) operands for backward (it gathers them again, chunk by chunk)."""

    @staticmethod
    def forward(ctx, left, right, left_ids, right_ids, chunk):
        out = left.new_empty(left_ids.shape[0])
        for start in range(0, left_ids.shape[0], chunk):
            stop = start + chunk
            out[start:stop] = (
                left.index_select(0, left_ids[start:stop]) * right.index_select(0, right_ids[start:stop])
            ).sum(1)
        ctx.save_for_backward(left, right, left_ids, right_ids)
        ctx.chunk = chunk
        return out

    @staticmethod
    def backward(ctx, grad):
        left, right, left_ids, right_ids = ctx.saved_tensors
        grad_left = torch.zeros_like(left) if ctx.needs_input_grad[0] else None
        grad_right = torch.zeros_like(right) if ctx.needs_input_grad[1] else None
        for start in range(0, left_ids.shape[0], ctx.chunk):
            stop = start + ctx.chunk
            g = grad[start:stop, None]
            if grad_left is not None:
                grad_left.index_add_(0, left_ids[start:stop], g * right.index_select(0, right_ids[start:stop]))
            if grad_right is not None:
                grad_right.index_add_(0, right_ids[start:stop], g * left.index_select(0, left_ids[start:stop]))
        return grad_left, grad_right, None, None, None


def _log_normaliser(logits: Tensor, segment: Tensor, num_segments: int, dim: int = -1) -> Tensor:
    """log(1 + sum of exp(logits) over each segment) along ``dim``: the 1 is the reference
    child's exp(0). ``segment`` (T,) gives the segment of each of the T logits along ``dim``."""
    shape = [1] * logits.dim()
    shape[dim] = -1
    index = segment.view(shape).expand_as(logits)
    size = list(logits.shape)
    size[dim] = num_segments
    peak = logits.new_zeros(size).scatter_reduce(dim, index, logits.detach(), "amax", include_self=True)
    total = torch.exp(-peak).scatter_add(dim, index, torch.exp(logits - peak.gather(dim, index)))
    return peak + torch.log(total)


@OUTPUTS.register("hsm")
class HierarchicalSoftmax(OutputLayer):
    """p(w | h) = product over the path of w of the node decisions (see the module docstring).

    Args:
        in_features: H.
        num_classes: V.
        tree: ``"huffman"`` (default; word2vec), ``"balanced"`` (ids in frequency order),
            ``"random"`` (balanced over a random order), ``"class"`` (two levels, about sqrt(V)
            frequency classes), ``"clustered"`` (needs ``vectors``), a :class:`Tree`, or the
            dict of :meth:`Tree.to_dict` (how a checkpoint's meta carries a built tree).
        counts: class frequencies, which ``huffman`` and ``class`` read (they refuse to be built
            without them; ``bigvocab.zipf_counts(V)`` is Zipf's law over the ids' order).
        vectors: (V, D) word vectors for ``tree="clustered"`` (Mnih & Hinton 2008).
        bias: a bias per node decision.
        zero_init: start the node vectors at zero, as word2vec's ``syn1`` (for skip-gram and
            CBOW); by default they start uniform in ±1/sqrt(H), which a language model's hidden
            layer needs to receive a gradient at the first step.
        max_chunk_elements: bound on the floats held at once by the exact computations (None: 2**24);
            ``log_softmax``'s row chunks may exceed it (at least 16 rows, or a quarter of the rows asked for).
        device, dtype: where the parameters are created.

    Parameters: ``weight`` (V - 1, H) and ``bias`` (V - 1,), one row per non-reference child.
    The tree is part of the state_dict, so a checkpoint restores the tree it was trained with.
    """

    sparse_grad = True
    topk_by_search = True
    variants = {kind: {"tree": kind} for kind in TREES.names()}
    retrieval_variants = {"huffman": {"tree": "huffman"}}
    engine_kind = HIERARCHICAL_SOFTMAX

    # The tree's buffers (registered by _set_tree): the canonical arrays, then the derived tables.
    tree_node_parent: Tensor
    tree_node_position: Tensor
    tree_leaf_parent: Tensor
    tree_leaf_position: Tensor
    _path_offsets: Tensor
    _path_nodes: Tensor
    _path_positions: Tensor
    _arity: Tensor
    _param_base: Tensor
    _child_offsets: Tensor
    _children: Tensor
    _leaf_runs: Tensor
    _param_owner: Tensor
    _unified_parent: Tensor
    _edge_row: Tensor

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        tree: str | Tree | Mapping = "huffman",
        counts=None,
        vectors: Tensor | None = None,
        bias: bool = True,
        zero_init: bool = False,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        self.zero_init = check_flag("zero_init", zero_init)
        if max_chunk_elements is not None:
            check_positive_int("max_chunk_elements", max_chunk_elements)
        self.max_chunk_elements = max_chunk_elements or DEFAULT_CHUNK_ELEMENTS
        if isinstance(tree, Mapping):
            tree = Tree.from_dict(tree)
        if isinstance(tree, Tree):
            if tree.num_leaves != num_classes:
                raise ConfigError(f"the tree has {tree.num_leaves} leaves but num_classes={num_classes}")
        elif isinstance(tree, str):
            tree = build_tree(tree, num_classes, counts=counts, vectors=vectors)
        else:
            raise ConfigError(f"tree must be a name or a Tree, got {type(tree).__name__}")
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(num_classes - 1, in_features, **factory))
        self.bias = nn.Parameter(torch.zeros(num_classes - 1, **factory)) if bias else None
        self._set_tree(tree)
        #: Nodes ``topk`` may expand per query before it scores that query in full instead.
        self.search_budget = max(4096, num_classes // 32)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.zero_init:
            nn.init.zeros_(self.weight)
        else:
            bound = 1.0 / math.sqrt(self.in_features)
            nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def engine_unsupported(self) -> str | None:
        """word2vec's hierarchical softmax: one sigmoid per node of a binary tree, no bias."""
        if self.bias is not None:
            return "the engine's output layers have no bias (word2vec's); this one has one"
        return None if self.tree.is_binary else "the engine's hierarchical softmax needs a binary tree"

    def _engine_tables(self) -> EngineTables:
        nodes = self._path_nodes.cpu().long()
        # a binary node's one vector is row param_base[node]
        rows = self._param_base.cpu()[nodes]
        return EngineTables(
            "hs",
            self.weight,
            path_offsets=self._path_offsets.cpu(),
            path_rows=rows,
            path_codes=self._path_positions.cpu().long(),
        )

    # ------------------------------------------------------------------ the tree as buffers
    @classmethod
    def side_inputs(cls, options: Mapping[str, Any]) -> frozenset[str]:
        """``counts`` and ``vectors`` only where the tree asked for reads them (a Huffman tree
        needs no word vectors, so nobody computes them for it)."""
        return super().side_inputs(options) & tree_side_inputs(options.get("tree", "huffman"))

    def rebuild_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """A tree built from word vectors (``clustered``) is recorded as the tree itself (the dict
        of :meth:`Tree.to_dict`), so that the layer is rebuilt without the vectors."""
        rebuilt = dict(options)
        if "vectors" in self.side_inputs(options):
            rebuilt["tree"] = self.tree.to_dict()
        return rebuilt

    def _set_tree(self, tree: Tree) -> None:
        """Register the tree's arrays: the four canonical ones persist in the state_dict, the
        index tables derived from them do not."""
        device = self.weight.device
        self.tree = tree
        for name in _TREE_STATE:
            self.register_buffer(f"tree_{name}", getattr(tree, name).to(device))
        num_nodes = tree.num_nodes
        # Row of u_j for the child in slot s of node n (position >= 1): s - n - 1.
        param_base = tree.child_offsets[:-1] - torch.arange(num_nodes)
        unified_parent = torch.cat([tree.node_parent, tree.leaf_parent])
        unified_position = torch.cat([tree.node_position, tree.leaf_position])
        # Row of every unified node's own decision; the reference child points past the end,
        # where _log_softmax appends a column of zeros.
        edge_row = torch.where(
            unified_position > 0, param_base[unified_parent.clamp_min(0)] + unified_position - 1, self.num_classes - 1
        )
        path_offsets, path_nodes, path_positions = tree.paths()
        derived = {
            "path_offsets": path_offsets,
            # int32 node ids and, in a binary tree, int8 positions: 5 bytes a step of every path
            # (112 MB for a Huffman tree at V = 1M) where int64 took 16.
            "path_nodes": path_nodes.to(torch.int32),
            "path_positions": path_positions.to(torch.int8 if tree.is_binary else torch.int32),
            "arity": tree.arity,
            "param_base": param_base,
            "child_offsets": tree.child_offsets,
            "children": tree.children,
            "leaf_runs": tree.leaf_runs(),
            "param_owner": torch.repeat_interleave(torch.arange(num_nodes), tree.arity - 1),
            "unified_parent": unified_parent.clamp_min(0),
            "edge_row": edge_row,
        }
        for name, value in derived.items():
            self.register_buffer(f"_{name}", value.to(device), persistent=False)
        self._binary = tree.is_binary
        levels = torch.bincount(tree.node_depth)
        self._level_offsets = [0] + torch.cumsum(levels, 0).tolist()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        keys = [f"{prefix}tree_{name}" for name in _TREE_STATE]
        if all(key in state_dict for key in keys):
            self._set_tree(Tree(*(state_dict[key].cpu() for key in keys)))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def _num_nodes(self) -> int:
        return self.tree.num_nodes

    def _pairs_per_chunk(self) -> int:
        return max(1, min(self.max_chunk_elements, _CACHE_ELEMENTS) // self.in_features)

    # ------------------------------------------------------------------ cost model
    def train_cost(self, target: Tensor) -> Cost:
        return self._path_cost(target, training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        return self._path_cost(target, training=False)

    def _path_cost(self, target: Tensor, *, training: bool) -> Cost:
        """A row scores the decision vectors of the nodes on its target's path -- one per binary
        node, arity - 1 per n-ary node (Morin & Bengio 2005; Mikolov et al. 2013; Goodman 2001);
        a node on several rows' paths is read once."""
        nodes = self._steps(target)[1]
        vectors = float((self._arity[nodes] - 1).sum())
        distinct = float((self._arity[torch.unique(nodes)] - 1).sum())
        size = self.element_size()
        weights = distinct * (self.in_features + (self.bias is not None))
        path_rows = dot_cost(vectors, self.in_features, weights, element_size=size, training=training, gathered=True)
        return path_rows + hidden_cost(target.numel(), self.in_features, element_size=size, training=training)

    # ------------------------------------------------------------------ paths and decisions
    def _steps(self, target: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Every (example, node, child position) on the targets' paths, flat: three (S,) tensors,
        gathered from the stored paths (walking up the tree one level per step took 0.70-0.72 ms
        for 1,024 targets of a Huffman tree at V = 1M, the gather 0.18-0.19 ms;
        ``docs/design/hsm-training-step.md``)."""
        start = self._path_offsets.index_select(0, target)
        depth = self._path_offsets.index_select(0, target + 1) - start
        example = torch.repeat_interleave(torch.arange(target.shape[0], device=target.device), depth)
        flat = segment_ranges(start, depth)
        # index_select, not indexing: on the CPU 3-5x faster for these 1-D gathers of a step's
        # 15k path steps (``docs/design/fused-optimizer.md``).
        return example, self._path_nodes.index_select(0, flat).long(), self._path_positions.index_select(0, flat).long()

    def _decision_log_probs(self, hidden: Tensor, example: Tensor, node: Tensor, position: Tensor) -> Tensor:
        """log p(child ``position`` | ``node``, hidden[``example``]) for each step, (S,).

        A binary node has one decision vector, its child 0 the reference: log p = -softplus(s) for
        child 0 and -softplus(-s) for child 1, two elementwise passes instead of the general
        node's segments of arity - 1 logits and their normaliser (about 20 small index, scatter
        and cumsum operations over the S steps; ``docs/design/hsm-training-step.md``).
        """
        if self._binary:
            logits = self._row_logits(hidden, example, self._param_base.index_select(0, node))
            return -F.softplus(torch.where(position > 0, -logits, logits))
        width = self._arity[node] - 1
        step_of = torch.repeat_interleave(torch.arange(node.shape[0], device=node.device), width)
        rows = segment_ranges(self._param_base[node], width)
        if rows.numel() == 0:  # no decision vectors among these steps (a shard's share may hold none)
            return hidden.new_zeros(node.shape[0])
        logits = self._row_logits(hidden, example[step_of], rows)
        log_z = _log_normaliser(logits, step_of, node.shape[0])
        first = torch.cumsum(width, 0) - width
        chosen = logits[(first + position - 1).clamp(0, rows.numel() - 1)]
        return torch.where(position > 0, chosen, torch.zeros_like(chosen)) - log_z

    def _row_logits(self, hidden: Tensor, example: Tensor, rows: Tensor) -> Tensor:
        """hidden[example[p]] . weight[rows[p]] (+ bias) for P (example, decision row) pairs, (P,):
        each touched row gathered once (sparse gradient), then one dot product per pair."""
        unique_rows, inverse = distinct_ids(rows, self.weight.shape[0])
        if pairs_compiled(hidden):
            logits = row_pair_dots(hidden, self.weight, unique_rows, example, inverse, sparse=self.sparse_grad)
        else:
            weight = gather_rows(self.weight, unique_rows, sparse=self.sparse_grad)
            logits = _PairDots.apply(hidden, weight, example, inverse, self._pairs_per_chunk())
        if self.bias is not None:
            logits = logits + gather_rows(self.bias, unique_rows, sparse=self.sparse_grad)[inverse]
        return logits

    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        example, node, position = self._steps(target)
        step_log_p = self._decision_log_probs(hidden, example, node, position)
        return hidden.new_zeros(target.shape[0]).index_add(0, example, step_log_p)

    # ------------------------------------------------------------------ the whole distribution
    def _log_softmax(self, hidden: Tensor) -> Tensor:
        """Every leaf's log-probability, top-down, in row chunks: on the CPU without autograd by
        a compiled pass over each row (:meth:`_compiled_log_softmax`; any tree in float32, a
        binary tree in float64 too), otherwise one tree level at a time in torch.

        The torch pass runs node-major: the node logits are computed as (nodes, n) = W h^T, so the nodes
        of one level, and the children they write, are whole contiguous rows of n numbers; in the
        (n, nodes) layout each level gathered and scattered columns, which cost more than the
        product itself. Each chunk reads the (V - 1, H) weights once, so chunks are as large as
        ``max_chunk_elements`` allows, and at least _MIN_ROWS rows (with fewer, streaming the
        weights dominates -- at V = 1M, 2 rows per chunk made it 8x slower than the full softmax)
        or a quarter of the n rows asked for: the chunk's buffers, at most 2 (V - 1 + V) floats a
        row, then stay within the (n, V) output the caller already holds, and the product has
        rows enough to run near the matmul rate (16 rows at V = 1M ran it at half the rate of 134).
        """
        per_row = 2 * (self._num_nodes + self.num_classes)
        rows_per_chunk = max(_MIN_ROWS, self.max_chunk_elements // per_row, hidden.shape[0] // 4)
        if (
            hidden.device.type == "cpu"
            and (self._binary or hidden.dtype == torch.float32)
            and not _differentiable(hidden, self.weight)
        ):
            return self._compiled_log_softmax(hidden, rows_per_chunk)
        level = self._binary_levels if self._binary else self._general_levels
        out = hidden.new_empty(hidden.shape[0], self.num_classes)
        for start in range(0, hidden.shape[0], rows_per_chunk):
            h = hidden[start : start + rows_per_chunk]
            out[start : start + rows_per_chunk] = level(self._node_logits(h)).t()
        return out

    def _node_logits(self, h: Tensor) -> Tensor:
        """(V - 1, n) scores of every node row for the n hidden states h; a vocabulary-parallel
        tree (:mod:`bigvocab.outputs.parallel.hsm`) assembles them from the ranks' rows instead."""
        return row_scores(self.weight, self.bias, h)

    def _example_logits(self, h: Tensor, out: Tensor | None = None) -> Tensor:
        """(n, V - 1): the same scores example-major, the layout the compiled pass walks; written
        into ``out`` (n, V - 1) when given, which may be the first columns of wider rows."""
        return example_logits(h, self.weight, self.bias, out=out)

    def _compiled_log_softmax(self, hidden: Tensor, rows_per_chunk: int) -> Tensor:
        """Without autograd on CPU: example-major node logits (n, V - 1) and one compiled top-down
        pass per row (:mod:`bigvocab.kernels.trees`: a binary tree's, or for float32 any
        tree's), rows split over torch's threads. The chunks share one logits buffer (and, for a
        float64 binary tree, one softplus buffer): allocating them afresh for every chunk made the
        pass at V = 1M 1.3x slower (``docs/design/hsm-log-softmax.md``). Its rows are padded to an
        aligned width, since the product into rows of V - 1 (odd) columns ran up to 1.75x slower
        (``docs/design/hsm-log-softmax.md``)."""
        # numba loads on first use
        from bigvocab.kernels.trees import (
            aligned_width,
            binary_leaf_log_probs,
            general_leaf_log_probs,
            softplus_scratch,
        )

        rows = self.num_classes - 1
        out = hidden.new_empty(hidden.shape[0], self.num_classes)
        logits = hidden.new_empty(min(rows_per_chunk, hidden.shape[0]), aligned_width(rows))
        threads = torch.get_num_threads()
        if self._binary:
            children, scratch = self._children.view(-1, 2), softplus_scratch(logits[:, :rows])

            def leaf_log_probs(chunk: Tensor, into: Tensor) -> None:
                binary_leaf_log_probs(
                    chunk,
                    children,
                    threads=threads,
                    out=into,
                    scratch=None if scratch is None else scratch[: chunk.shape[0]],
                )
        else:

            def leaf_log_probs(chunk: Tensor, into: Tensor) -> None:
                general_leaf_log_probs(
                    chunk, self._children, self._child_offsets, self._leaf_runs, threads=threads, out=into
                )

        for start in range(0, hidden.shape[0], rows_per_chunk):
            h = hidden[start : start + rows_per_chunk]
            self._example_logits(h, out=logits[: h.shape[0], :rows])
            leaf_log_probs(logits[: h.shape[0]], out[start : start + h.shape[0]])
        return out

    def _binary_levels(self, logits: Tensor) -> Tensor:
        """(V - 1, n) node logits of a canonical binary tree -> (V, n) leaf log-probabilities."""
        num_nodes = self._num_nodes
        # Unified ids: internal nodes, then leaves; row x holds log p(x) for the n hidden rows.
        log_p = logits.new_empty(num_nodes + self.num_classes, logits.shape[1])
        log_p[0] = 0.0
        offsets = self._level_offsets
        children = self._children.view(-1, 2)  # node n's children fill slots 2n and 2n + 1
        for lo, hi in zip(offsets[:-1], offsets[1:]):
            below = log_p[lo:hi] + F.logsigmoid(-logits[lo:hi])  # position 0
            log_p.index_copy_(0, children[lo:hi, 0], below)
            log_p.index_copy_(0, children[lo:hi, 1], below + logits[lo:hi])  # position 1 adds the logit
        return log_p[num_nodes:]

    def _general_levels(self, logits: Tensor) -> Tensor:
        """(V - 1, n) child logits of any tree -> (V, n) leaf log-probabilities."""
        num_nodes = self._num_nodes
        log_z = _log_normaliser(logits, self._param_owner, num_nodes, dim=0)
        padded = torch.cat([logits, logits.new_zeros(1, logits.shape[1])])
        # log p(x | parent(x)) for every node x, internal nodes first, then leaves.
        decision = padded.index_select(0, self._edge_row) - log_z.index_select(0, self._unified_parent)
        node_log_p = logits.new_zeros(num_nodes, logits.shape[1])
        for lo, hi in zip(self._level_offsets[1:-1], self._level_offsets[2:]):
            node_log_p[lo:hi] = node_log_p.index_select(0, self.tree_node_parent[lo:hi]) + decision[lo:hi]
        return node_log_p.index_select(0, self.tree_leaf_parent) + decision[num_nodes:]

    # ------------------------------------------------------------------ exact top-k
    def _expand(
        self, hidden: Tensor, query: Tensor, node: Tensor, log_p: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Children of the internal ``node``s (one per query): (pair index, child unified id,
        child log-prob, child position), one entry per child."""
        num_pairs, chunk = node.shape[0], self._pairs_per_chunk()
        if self._binary:
            # Canonical binary trees: node n owns row n and the slots 2n, 2n + 1.
            logit = _PairDots.apply(hidden, self.weight, query, node, chunk)
            if self.bias is not None:
                logit = logit + self.bias[node]
            child_log_p = torch.stack([log_p - F.softplus(logit), log_p - F.softplus(-logit)], 1)
            pair = torch.arange(num_pairs, device=node.device).repeat_interleave(2)
            position = torch.tensor([0, 1], device=node.device).repeat(num_pairs)
            return pair, self._children.view(-1, 2)[node].flatten(), child_log_p.flatten(), position
        arity = self._arity[node]
        pair = torch.repeat_interleave(torch.arange(num_pairs, device=node.device), arity)
        slot = segment_ranges(self._child_offsets[node], arity)
        position = slot - self._child_offsets[node][pair]
        has_row = position > 0
        rows = slot[has_row] - node[pair[has_row]] - 1
        row_logits = _PairDots.apply(hidden, self.weight, query[pair[has_row]], rows, chunk)
        if self.bias is not None:
            row_logits = row_logits + self.bias[rows]
        log_z = _log_normaliser(row_logits, pair[has_row], num_pairs)
        logits = torch.zeros(slot.shape[0], dtype=hidden.dtype, device=hidden.device)
        logits[has_row] = row_logits
        return pair, self._children[slot], log_p[pair] + logits - log_z[pair], position

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            per_query = max(k * (self.tree.max_arity + 1), self.search_budget)
            per_chunk = max(1, self.max_chunk_elements // per_query)
            pieces = [
                self._topk_chunk(hidden[start : start + per_chunk], k) for start in range(0, hidden.shape[0], per_chunk)
            ]
        return torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])

    def _topk_chunk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        num_nodes = self._num_nodes

        def expand(query: Tensor, node: Tensor, log_p: Tensor, payload: Tensor | None) -> Children:
            pair, child, child_log_p, _ = self._expand(hidden, query, node, log_p)
            # Unified ids: internal nodes first, then the leaves (classes).
            return Children(pair, child, child_log_p, torch.where(child >= num_nodes, child - num_nodes, -1))

        return tree_topk(
            hidden.shape[0],
            k,
            expand,
            lambda rows: self._log_softmax(hidden[rows]).topk(k, dim=1),
            budget=self.search_budget,
            dtype=hidden.dtype,
            device=hidden.device,
        )

    def shard_vocabulary(self, group: Any, *, partition: Any = None) -> OutputLayer:
        """Top of the tree replicated, whole subtrees owned by ranks
        (:class:`~bigvocab.outputs.parallel.hsm.VocabParallelHSM`)."""
        from bigvocab.outputs.parallel.hsm import VocabParallelHSM  # torch.distributed loads only when a layer is split

        if partition is not None:
            raise ConfigError("hsm splits its tree by subtrees; partition= is for layers over linear rows")
        return VocabParallelHSM(self, group)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", tree={self.tree!r}, bias={self.bias is not None}, zero_init={self.zero_init}"


def row_scores(weight: Tensor, bias: Tensor | None, h: Tensor) -> Tensor:
    """(rows, n) = weight h^T + bias: node-major scores of the rows for the n hidden states h."""
    if bias is None:
        return torch.mm(weight, h.t())
    return torch.addmm(bias.unsqueeze(1), weight, h.t())


def _differentiable(hidden: Tensor, weight: Tensor) -> bool:
    """Whether autograd records a computation on these inputs now."""
    return torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
