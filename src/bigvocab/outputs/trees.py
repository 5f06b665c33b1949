"""Trees over the vocabulary for the hierarchical softmax: a :class:`Tree` object and its builders.

A tree has V leaves (the classes) and M internal nodes. Every internal node has an ordered list of
children (internal nodes or leaves); a leaf's *code* is the list of child positions on its path from
the root, so codes are prefix-free by construction. Nodes need not be binary: the two-level class
tree has about sqrt(V) children at the root and at every class node, and the hierarchical softmax
normalises over the children of each node.

Builders:

* :func:`huffman_tree` -- binary Huffman code of the unigram counts (word2vec, Mikolov et al. 2013),
  O(V log V): one sort plus the linear two-queue merge that word2vec also uses.
* :func:`balanced_tree` -- complete binary tree by recursive halving (optionally of a permutation,
  e.g. a random one).
* :func:`class_tree` -- two levels, about sqrt(V) classes of roughly equal unigram mass (Goodman 2001;
  Mikolov et al. 2011, RNNLM).
* :func:`clustered_tree` -- recursive 2-means bisection of word vectors (Mnih & Hinton 2008).
* :func:`tree_from_codes` -- a tree from user-given codes; :meth:`Tree.from_dict` / :meth:`Tree.load`.

Canonical form: internal nodes are numbered breadth-first (root 0, parent id < child id, each depth
contiguous), children in position order. Where one id space is handy, internal node ``n`` is ``n``
and leaf ``w`` is ``M + w`` ("unified ids").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from bigvocab.errors import CheckpointError, ConfigError
from bigvocab.registry import TREES, unknown_name_message
from bigvocab.samplers.base import as_counts, required_counts
from bigvocab.validation import check_positive_int

_FIELDS = ("node_parent", "node_position", "leaf_parent", "leaf_position")

#: Power-iteration steps for the first split direction at each clustered-tree node: a rough
#: direction is enough, the 2-means steps that follow correct it.
POWER_ITERATIONS = 4


def segment_ranges(starts: Tensor, lengths: Tensor) -> Tensor:
    """Concatenation of ``arange(s, s + l)`` over the pairs of ``starts`` and ``lengths`` (1-D long)."""
    total = int(lengths.sum())
    if total == 0:
        return starts.new_empty(0)
    group_start = torch.cumsum(lengths, 0) - lengths
    return torch.repeat_interleave(starts - group_start, lengths, output_size=total) + torch.arange(
        total, device=starts.device
    )


def walk_up(
    leaf_parent: Tensor, leaf_position: Tensor, node_parent: Tensor, node_position: Tensor, leaves: Tensor
) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """The paths of ``leaves`` (L,), all at once, from the leaves up to the root (node 0).

    Yields one level per step: ``(index, node, position)``, each (L',), with ``index`` the
    positions in ``leaves`` whose path is still below the root, ``node`` the internal node
    reached and ``position`` the child taken there. Works on the tree arrays wherever they live
    (a :class:`Tree`'s CPU tensors, or an hsm layer's buffers on its device).
    """
    index = torch.arange(leaves.shape[0], device=leaves.device)
    node, position = leaf_parent[leaves], leaf_position[leaves]
    while index.numel():
        yield index, node, position
        below_root = node != 0
        index, node = index[below_root], node[below_root]
        node, position = node_parent[node], node_position[node]


class Tree:
    """A rooted tree over ``num_leaves`` classes, validated and stored in canonical order.

    Args:
        node_parent: (M,) parent of each internal node, -1 for the root (exactly one); internal
            nodes may be numbered in any order, they are renumbered breadth-first.
        node_position: (M,) position of each internal node among its parent's children.
        leaf_parent: (V,) parent (an internal node id) of each leaf.
        leaf_position: (V,) position of each leaf among its parent's children.

    The positions of a node's children must be exactly 0..a-1. A node with one child is allowed
    (its decision has probability 1).

    Attributes (long tensors, canonical numbering):
        node_parent, node_position, leaf_parent, leaf_position: as above, renumbered.
        arity: (M,) number of children. child_offsets: (M + 1,) CSR into ``children``.
        children: (M + V - 1,) unified ids of the children of each node, in position order.
        node_depth: (M,) root = 0. leaf_depth: (V,) code length of every leaf.
    """

    def __init__(self, node_parent, node_position, leaf_parent, leaf_position) -> None:
        arrays = [
            _as_long(name, value)
            for name, value in zip(_FIELDS, (node_parent, node_position, leaf_parent, leaf_position))
        ]
        node_parent, node_position, leaf_parent, leaf_position = arrays
        if node_parent.numel() != node_position.numel() or leaf_parent.numel() != leaf_position.numel():
            raise ConfigError("tree: parent and position arrays must have the same length")
        if leaf_parent.numel() < 1 or node_parent.numel() < 1:
            raise ConfigError("tree: needs at least one leaf and one internal node (the root)")
        self._canonicalise(node_parent, node_position, leaf_parent, leaf_position)
        self.leaf_depth = self.node_depth[self.leaf_parent] + 1

    # ------------------------------------------------------------------ construction
    def _canonicalise(
        self, node_parent: Tensor, node_position: Tensor, leaf_parent: Tensor, leaf_position: Tensor
    ) -> None:
        num_nodes, num_leaves = node_parent.numel(), leaf_parent.numel()
        roots = (node_parent == -1).nonzero().flatten()
        if roots.numel() != 1:
            raise ConfigError(f"tree: exactly one internal node must have parent -1 (the root), found {roots.numel()}")
        root = int(roots[0])
        parent = torch.cat([node_parent, leaf_parent])
        position = torch.cat([node_position, leaf_position])
        child = torch.cat([torch.arange(root), torch.arange(root + 1, num_nodes + num_leaves)])
        if ((parent[child] < 0) | (parent[child] >= num_nodes)).any():
            raise ConfigError(f"tree: every parent must be an internal node id in [0, {num_nodes})")
        if (position[child] < 0).any():
            raise ConfigError("tree: child positions must be non-negative")
        slots, offsets = _children_csr(parent[child], position[child], child, num_nodes)
        arity = offsets[1:] - offsets[:-1]
        if (arity == 0).any():
            bad = int((arity == 0).nonzero()[0])
            raise ConfigError(f"tree: internal node {bad} has no children (every internal node needs a leaf below it)")
        rank = torch.arange(slots.numel()) - torch.repeat_interleave(offsets[:-1], arity)
        if not torch.equal(position[slots], rank):
            raise ConfigError("tree: the positions of each node's children must be exactly 0, 1, ..., arity - 1")
        levels = [torch.tensor([root])]
        while True:
            kids = slots[segment_ranges(offsets[levels[-1]], arity[levels[-1]])]
            kids = kids[kids < num_nodes]
            if kids.numel() == 0:
                break
            levels.append(kids)
        old_of_new = torch.cat(levels)
        if old_of_new.numel() != num_nodes:
            raise ConfigError(
                f"tree: {num_nodes - old_of_new.numel()} internal nodes cannot be reached from the root "
                "(a cycle or a detached part)"
            )
        new_of_old = torch.empty(num_nodes, dtype=torch.long)
        new_of_old[old_of_new] = torch.arange(num_nodes)
        self.num_nodes, self.num_leaves = num_nodes, num_leaves
        old_parents = node_parent[old_of_new]
        self.node_parent = torch.where(old_parents < 0, old_parents, new_of_old[old_parents.clamp_min(0)])
        self.node_position = node_position[old_of_new].clone()
        self.leaf_parent = new_of_old[leaf_parent]
        self.leaf_position = leaf_position.clone()
        self.node_depth = torch.repeat_interleave(
            torch.arange(len(levels)), torch.tensor([len(level) for level in levels])
        )
        unified_parent = torch.cat([self.node_parent[1:], self.leaf_parent])
        unified_child = torch.arange(1, num_nodes + num_leaves)
        self.children, self.child_offsets = _children_csr(
            unified_parent, torch.cat([self.node_position[1:], self.leaf_position]), unified_child, num_nodes
        )
        self.arity = self.child_offsets[1:] - self.child_offsets[:-1]

    # ------------------------------------------------------------------ inspection
    @property
    def depth(self) -> int:
        """Length of the longest code."""
        return int(self.leaf_depth.max())

    @property
    def max_arity(self) -> int:
        return int(self.arity.max())

    @property
    def is_binary(self) -> bool:
        return bool((self.arity == 2).all())

    def leaf_runs(self) -> Tensor:
        """(M,): for each internal node whose children are all leaves with consecutive ids, in
        position order, the first one's leaf id; -1 for the others. A pass over the tree may
        write such a node's children as one run (every class of a ``class`` tree is one)."""
        num_nodes, children, first = self.num_nodes, self.children, self.child_offsets[:-1]
        follows = torch.ones_like(children, dtype=torch.bool)
        follows[1:] = children[1:] == children[:-1] + 1
        follows[first] = True  # a node's first child follows nothing
        fits = ((children >= num_nodes) & follows).long()
        owner = torch.repeat_interleave(torch.arange(num_nodes), self.arity)
        every = torch.ones(num_nodes, dtype=torch.long).scatter_reduce(0, owner, fits, "amin")
        return torch.where(every.bool(), children[first] - num_nodes, -1)

    def walk_up(self, leaves: Tensor) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        """:func:`walk_up` over this tree's arrays."""
        return walk_up(self.leaf_parent, self.leaf_position, self.node_parent, self.node_position, leaves)

    def paths(self) -> tuple[Tensor, Tensor, Tensor]:
        """Every leaf's path as CSR: ``offsets`` (V + 1,), ``nodes`` and ``codes`` (sum of depths,):
        leaf ``w``'s internal nodes from the root down and the child position taken at each."""
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(self.leaf_depth, 0)])
        nodes = torch.empty(int(offsets[-1]), dtype=torch.long)
        codes = torch.empty_like(nodes)
        # Every leaf's path is written from its end, one level up per step.
        last = offsets[1:] - 1
        for level, (leaf, node, code) in enumerate(self.walk_up(torch.arange(self.num_leaves))):
            nodes[last[leaf] - level] = node
            codes[last[leaf] - level] = code
        return offsets, nodes, codes

    def path(self, leaf: int) -> list[int]:
        """Internal node ids from the root to ``leaf``'s parent."""
        return [int(node) for _, node, _ in self._walk(leaf)]

    def code(self, leaf: int) -> tuple[int, ...]:
        """Child positions taken from the root to ``leaf`` (bits for a binary tree)."""
        return tuple(int(code) for _, _, code in self._walk(leaf))

    def codes(self) -> list[tuple[int, ...]]:
        offsets, _, codes = self.paths()
        flat, bounds = codes.tolist(), offsets.tolist()
        return [tuple(flat[bounds[w] : bounds[w + 1]]) for w in range(self.num_leaves)]

    def _walk(self, leaf: int) -> list[tuple[Tensor, Tensor, Tensor]]:
        """The steps of ``leaf``'s path from the root down."""
        if not 0 <= leaf < self.num_leaves:
            raise ConfigError(f"leaf {leaf} is outside [0, {self.num_leaves})")
        return list(self.walk_up(torch.tensor([leaf])))[::-1]

    def average_code_length(self, counts) -> float:
        """Frequency-weighted mean number of decisions per class: bits for a binary tree."""
        weights = as_counts(counts, self.num_leaves, "Tree.average_code_length")
        return float((weights * self.leaf_depth.double()).sum() / weights.sum())

    def __repr__(self) -> str:
        return (
            f"Tree(num_leaves={self.num_leaves}, num_nodes={self.num_nodes}, depth={self.depth}, "
            f"max_arity={self.max_arity})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return all(torch.equal(getattr(self, name), getattr(other, name)) for name in _FIELDS)

    # ------------------------------------------------------------------ saving
    def to_dict(self) -> dict[str, Tensor]:
        """The four canonical arrays; :meth:`from_dict` rebuilds the tree from them."""
        return {name: getattr(self, name).clone() for name in _FIELDS}

    @classmethod
    def from_dict(cls, state: Mapping[str, Tensor]) -> Tree:
        missing = [name for name in _FIELDS if name not in state]
        if missing:
            raise ConfigError(f"tree: the dictionary lacks {', '.join(missing)}")
        return cls(*(state[name] for name in _FIELDS))

    def save(self, path: str | os.PathLike) -> None:
        torch.save(self.to_dict(), path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Tree:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise CheckpointError(f"tree file not found: {path}") from None
        except Exception as error:
            raise CheckpointError(f"cannot read a tree from {path}: {error}") from error
        if not isinstance(state, dict) or any(name not in state for name in _FIELDS):
            raise CheckpointError(f"{path} does not hold a tree saved by Tree.save")
        return cls.from_dict(state)


def _as_long(name: str, value) -> Tensor:
    try:
        tensor = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ConfigError(f"tree: {name} must be a sequence of integers") from error
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool or tensor.dim() != 1:
        raise ConfigError(f"tree: {name} must be a 1-D sequence of integers")
    return tensor.to(torch.long).cpu()


def _children_csr(parent: Tensor, position: Tensor, child: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """``child`` sorted by (parent, position) and the (num_nodes + 1,) offsets of each parent's run."""
    order = torch.argsort(parent * (int(position.max()) + 1) + position)  # keys are unique
    counts = torch.bincount(parent, minlength=num_nodes)
    return child[order], torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)])


# ---------------------------------------------------------------------- builders
def huffman_tree(counts) -> Tree:
    """Binary Huffman tree of ``counts`` (V,): frequent classes get short codes.

    The average code length L satisfies H <= L < H + 1 bits, H the entropy of the unigram
    distribution. Sort once, then merge with two queues (leaves in increasing count, merged nodes in
    the order they were made, which is also increasing), as word2vec's ``CreateBinaryTree`` does;
    ties prefer leaves, which keeps the tree shallow.
    """
    weights = as_counts(counts, len(counts), "huffman_tree")
    num_leaves = weights.numel()
    if num_leaves < 2:
        raise ConfigError("huffman_tree needs at least 2 classes")
    order = torch.argsort(weights, stable=True).tolist()
    leaf_weight = weights[order].tolist()
    merged_weight: list[float] = []
    # Builder ids: leaf w is w, the j-th merged node is V + j (and internal node j).
    parent = [0] * (2 * num_leaves - 1)
    position = [0] * (2 * num_leaves - 1)
    next_leaf = next_merged = 0
    for step in range(num_leaves - 1):
        total = 0.0
        for slot in (0, 1):
            # ``step`` merged nodes exist so far; take the lighter queue front.
            if next_leaf < num_leaves and (next_merged >= step or leaf_weight[next_leaf] <= merged_weight[next_merged]):
                node = order[next_leaf]
                total += leaf_weight[next_leaf]
                next_leaf += 1
            else:
                node = num_leaves + next_merged
                total += merged_weight[next_merged]
                next_merged += 1
            parent[node] = step
            position[node] = slot
        merged_weight.append(total)
    parent[-1] = -1
    parent_t = torch.from_numpy(np.asarray(parent, dtype=np.int64))
    position_t = torch.from_numpy(np.asarray(position, dtype=np.int64))
    return Tree(parent_t[num_leaves:], position_t[num_leaves:], parent_t[:num_leaves], position_t[:num_leaves])


def _bisection_tree(num_leaves: int, split: Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor]]) -> Tree:
    """Binary tree by recursive splitting, one level of the tree at a time.

    ``split(order, starts, sizes)`` gets the current leaf arrangement and the segments (each of
    size >= 2) of the nodes at this level; it returns the rearranged ``order`` (leaves move only
    within their segment) and the size of each segment's left part, in [1, size - 1].
    """
    order = torch.arange(num_leaves)
    node_parent, node_position = [torch.tensor([-1])], [torch.tensor([0])]
    leaf_parent = torch.empty(num_leaves, dtype=torch.long)
    leaf_position = torch.empty(num_leaves, dtype=torch.long)
    starts, sizes, ids = torch.tensor([0]), torch.tensor([num_leaves]), torch.tensor([0])
    next_id = 1
    while ids.numel():
        order, left = split(order, starts, sizes)
        child_start = torch.stack([starts, starts + left], 1).flatten()
        child_size = torch.stack([left, sizes - left], 1).flatten()
        child_parent = ids.repeat_interleave(2)
        child_position = torch.tensor([0, 1]).repeat(ids.numel())
        is_leaf = child_size == 1
        leaf = order[child_start[is_leaf]]
        leaf_parent[leaf] = child_parent[is_leaf]
        leaf_position[leaf] = child_position[is_leaf]
        inner = ~is_leaf
        count = int(inner.sum())
        node_parent.append(child_parent[inner])
        node_position.append(child_position[inner])
        starts, sizes = child_start[inner], child_size[inner]
        ids = torch.arange(next_id, next_id + count)
        next_id += count
    return Tree(torch.cat(node_parent), torch.cat(node_position), leaf_parent, leaf_position)


def balanced_tree(
    num_leaves: int, *, permutation: Sequence[int] | Tensor | None = None, seed: int | None = None
) -> Tree:
    """Complete binary tree (depth ceil(log2 V)) over the leaves in id order, or in the order
    ``permutation`` gives, or in a random order drawn with ``seed`` (the "random tree" baseline)."""
    num_leaves = check_positive_int("num_leaves", num_leaves)
    if num_leaves < 2:
        raise ConfigError("balanced_tree needs at least 2 classes")
    if permutation is not None and seed is not None:
        raise ConfigError("balanced_tree: give permutation or seed, not both")
    if seed is not None:
        arrangement = torch.randperm(num_leaves, generator=torch.Generator().manual_seed(seed))
    elif permutation is not None:
        arrangement = _as_long("permutation", permutation)
        if not torch.equal(torch.sort(arrangement).values, torch.arange(num_leaves)):
            raise ConfigError(f"balanced_tree: permutation must hold every id in [0, {num_leaves}) once")
    else:
        arrangement = torch.arange(num_leaves)

    def halve(order: Tensor, starts: Tensor, sizes: Tensor) -> tuple[Tensor, Tensor]:
        return order, (sizes + 1) // 2

    tree = _bisection_tree(num_leaves, halve)
    if not torch.equal(arrangement, torch.arange(num_leaves)):
        # Slot i of the halving holds class arrangement[i].
        leaf_parent = torch.empty_like(tree.leaf_parent)
        leaf_position = torch.empty_like(tree.leaf_position)
        leaf_parent[arrangement] = tree.leaf_parent
        leaf_position[arrangement] = tree.leaf_position
        tree = Tree(tree.node_parent, tree.node_position, leaf_parent, leaf_position)
    return tree


def class_tree(counts, num_classes: int | None = None) -> Tree:
    """Two-level tree: root -> frequency classes -> words (Goodman 2001; Mikolov et al. 2011).

    Classes are consecutive runs of the classes sorted by decreasing count, cut where the cumulative
    unigram mass crosses a multiple of 1 / C, so each holds about 1 / C of the mass (a word heavier
    than that is a class alone, and the empty bins are dropped, so there may be fewer than C).
    ``num_classes`` C defaults to round(sqrt(V)). Every node is a softmax over its children.
    """
    weights = as_counts(counts, len(counts), "class_tree")
    num_leaves = weights.numel()
    if num_leaves < 2:
        raise ConfigError("class_tree needs at least 2 classes")
    bins = (
        max(1, round(math.sqrt(num_leaves))) if num_classes is None else check_positive_int("num_classes", num_classes)
    )
    order = torch.argsort(-weights, stable=True)
    mass_before = (torch.cumsum(weights[order], 0) - weights[order]) / weights.sum()
    raw = (mass_before * bins).floor().long().clamp_(0, bins - 1)
    _, label = torch.unique_consecutive(raw, return_inverse=True)
    num_bins = int(label.max()) + 1
    start_of_bin = torch.searchsorted(label, torch.arange(num_bins))
    leaf_parent = torch.empty(num_leaves, dtype=torch.long)
    leaf_position = torch.empty(num_leaves, dtype=torch.long)
    leaf_parent[order] = label + 1
    leaf_position[order] = torch.arange(num_leaves) - start_of_bin[label]
    node_parent = torch.cat([torch.tensor([-1]), torch.zeros(num_bins, dtype=torch.long)])
    node_position = torch.cat([torch.tensor([0]), torch.arange(num_bins)])
    return Tree(node_parent, node_position, leaf_parent, leaf_position)


def clustered_tree(vectors: Tensor, *, iterations: int = 5, seed: int = 0) -> Tree:
    """Binary tree by recursive 2-means bisection of word vectors (V, D) (Mnih & Hinton 2008).

    At each node the words are split in two: start from the sign of their projection on the top
    principal direction (power iteration), then refine with ``iterations`` Lloyd steps of 2-means in
    the full space. A split that leaves one side empty (identical vectors) halves the node instead.
    Mnih & Hinton fit a two-component Gaussian mixture by EM at each node; 2-means is its
    hard-assignment, equal-variance limit. All nodes of a level are processed together.
    """
    if not isinstance(vectors, Tensor) or vectors.dim() != 2 or not vectors.is_floating_point():
        raise ConfigError("clustered_tree: vectors must be a floating-point tensor of shape (V, D)")
    if not torch.isfinite(vectors).all():
        raise ConfigError("clustered_tree: vectors hold NaN or Inf")
    if vectors.shape[0] < 2:
        raise ConfigError("clustered_tree needs at least 2 classes")
    # float32 halves the memory traffic of these bandwidth-bound passes; a split needs signs only.
    points = vectors.detach().to("cpu", torch.float32)
    generator = torch.Generator().manual_seed(seed)

    def two_means(order: Tensor, starts: Tensor, sizes: Tensor) -> tuple[Tensor, Tensor]:
        segment = torch.repeat_interleave(torch.arange(sizes.numel()), sizes)
        span = segment_ranges(starts, sizes)
        x = points[order[span]]
        x = x - _segment_mean(x, segment, sizes)[segment]
        direction = torch.randn(sizes.numel(), x.shape[1], generator=generator)
        for _ in range(POWER_ITERATIONS):
            projection = (x * direction[segment]).sum(1, keepdim=True)
            direction = torch.zeros_like(direction).index_add_(0, segment, x * projection)
            direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-30)
        score = (x * direction[segment]).sum(1)
        for _ in range(iterations):
            right = score > 0
            c_right = _segment_mean(x * right[:, None], segment, _segment_count(right, segment, sizes.numel()))
            c_left = _segment_mean(x * ~right[:, None], segment, _segment_count(~right, segment, sizes.numel()))
            difference = c_right - c_left
            offset = ((c_right.square() - c_left.square()).sum(1)) / 2
            score = (x * difference[segment]).sum(1) - offset[segment]
        left = _segment_count(score <= 0, segment, sizes.numel())
        degenerate = (left == 0) | (left == sizes)
        left = torch.where(degenerate, (sizes + 1) // 2, left)
        # Within each segment put the left side first (ascending score); stable keeps id order on ties.
        by_score = torch.argsort(score, stable=True)
        by_segment = by_score[torch.argsort(segment[by_score], stable=True)]
        order = order.clone()
        order[span] = order[span][by_segment]
        return order, left

    return _bisection_tree(points.shape[0], two_means)


def _segment_count(mask: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    return torch.zeros(num_segments, dtype=torch.long).index_add_(0, segment, mask.long())


def _segment_mean(x: Tensor, segment: Tensor, counts: Tensor) -> Tensor:
    total = torch.zeros(counts.numel(), x.shape[1], dtype=x.dtype).index_add_(0, segment, x)
    return total / counts.clamp_min(1)[:, None]


def tree_from_codes(codes: Sequence[str | Sequence[int]]) -> Tree:
    """Tree whose leaf ``w`` has the code ``codes[w]``: a string of digits (``"0110"``) or a sequence
    of non-negative ints (any arity). Codes must be non-empty and prefix-free. A node's children are
    ordered by their digit; unused digits are dropped, so every node still normalises over the
    children it has (a node with one child is a certain decision)."""
    parsed = [_parse_code(w, code) for w, code in enumerate(codes)]
    if len(parsed) < 2:
        raise ConfigError("tree_from_codes needs at least 2 codes")
    if len(set(parsed)) != len(parsed):
        seen: dict[tuple[int, ...], int] = {}
        for w, code in enumerate(parsed):
            if code in seen:
                raise ConfigError(f"tree_from_codes: classes {seen[code]} and {w} have the same code {code}")
            seen[code] = w
    internal: dict[tuple[int, ...], int] = {(): 0}
    for code in parsed:
        for cut in range(1, len(code)):
            internal.setdefault(code[:cut], len(internal))
    for w, code in enumerate(parsed):
        if code in internal:
            raise ConfigError(f"tree_from_codes: the code of class {w} {code} is a prefix of another code")
    prefixes = list(internal)
    parent = [-1] + [internal[prefix[:-1]] for prefix in prefixes[1:]] + [internal[code[:-1]] for code in parsed]
    digit = [0] + [prefix[-1] for prefix in prefixes[1:]] + [code[-1] for code in parsed]
    parent_t, digit_t = torch.tensor(parent), torch.tensor(digit)
    # Position = rank of the digit among the node's children.
    order = torch.argsort(parent_t * (int(digit_t.max()) + 1) + digit_t, stable=True)
    sorted_parent = parent_t[order]
    first = torch.searchsorted(sorted_parent, sorted_parent)
    position = torch.empty_like(parent_t)
    position[order] = torch.arange(parent_t.numel()) - first
    num_nodes = len(prefixes)
    return Tree(parent_t[:num_nodes], position[:num_nodes], parent_t[num_nodes:], position[num_nodes:])


def _parse_code(leaf: int, code) -> tuple[int, ...]:
    if isinstance(code, str):
        if not code or not code.isdigit():
            raise ConfigError(
                f"tree_from_codes: the code of class {leaf} must be a non-empty string of digits, got {code!r}"
            )
        return tuple(int(c) for c in code)
    try:
        digits = tuple(int(d) for d in code)
    except (TypeError, ValueError):
        raise ConfigError(
            f"tree_from_codes: the code of class {leaf} must be digits or a sequence of ints, got {code!r}"
        ) from None
    if not digits or min(digits) < 0:
        raise ConfigError(
            f"tree_from_codes: the code of class {leaf} must be non-empty with non-negative digits, got {code!r}"
        )
    return digits


def build_tree(kind: str, num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    """The tree registered as ``kind`` (``TREES.names()``: huffman, balanced, random, class,
    clustered) over ``num_leaves`` classes; each builder takes what it reads of ``counts`` and
    ``vectors``.

    ``huffman`` and ``class`` read ``counts`` and refuse to be built without them
    (:func:`~bigvocab.samplers.base.required_counts`).
    ``random`` is the balanced tree over a random order of the classes drawn from torch's global
    RNG (seed it for a reproducible tree): the "random tree" that Mnih & Hinton 2008 compare
    their learned trees with. ``clustered`` needs ``vectors`` (V, D): there is no sensible default
    for word similarity.
    """
    if kind not in TREES:
        raise ConfigError(unknown_name_message("tree", str(kind), TREES.names()))
    return TREES.get(kind)(num_leaves, counts=counts, vectors=vectors)


def tree_side_inputs(kind: object) -> frozenset[str]:
    """What the registered tree ``kind`` reads of ``counts`` and ``vectors`` (each builder
    declares it as ``reads``); a built :class:`Tree` or its dict reads neither."""
    if isinstance(kind, str) and kind in TREES:
        return TREES.get(kind).reads
    return frozenset()


def _reads(*inputs: str):
    """Declare on a tree builder which side inputs it reads."""

    def declare(builder):
        builder.reads = frozenset(inputs)
        return builder

    return declare


def _frequencies(kind: str, num_leaves: int, counts) -> Tensor:
    others = " or ".join(repr(name) for name in TREES.names() if not TREES.get(name).reads)
    return required_counts(counts, num_leaves, f"tree={kind!r}", f"choose tree={others}, which do not read them")


@TREES.register("huffman")
@_reads("counts")
def _huffman(num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    return huffman_tree(_frequencies("huffman", num_leaves, counts))


@TREES.register("balanced")
@_reads()
def _balanced(num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    return balanced_tree(num_leaves)


@TREES.register("random")
@_reads()
def _random(num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    return balanced_tree(num_leaves, permutation=torch.randperm(num_leaves))


@TREES.register("class")
@_reads("counts")
def _class(num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    return class_tree(_frequencies("class", num_leaves, counts))


@TREES.register("clustered")
@_reads("vectors")
def _clustered(num_leaves: int, *, counts=None, vectors: Tensor | None = None) -> Tree:
    if vectors is None:
        raise ConfigError(
            "tree='clustered' needs vectors=: a (V, D) tensor of word vectors, e.g. the input embeddings "
            "of a model trained first with another output layer (Mnih & Hinton 2008)"
        )
    if not isinstance(vectors, Tensor) or vectors.dim() != 2 or vectors.shape[0] != num_leaves:
        shape = tuple(vectors.shape) if isinstance(vectors, Tensor) else type(vectors).__name__
        raise ConfigError(f"tree='clustered': vectors must be a tensor of shape ({num_leaves}, D), got {shape}")
    return clustered_tree(vectors)
