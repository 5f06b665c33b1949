"""``hsm`` vocabulary-parallel: the top of the tree replicated, whole subtrees owned by ranks.

In a hierarchical softmax (Morin & Bengio 2005; Mikolov et al. 2013) log p(w | h) is a sum over
the internal nodes on w's path of the log-probability of the child taken there, and node n owns
``arity(n) - 1`` rows of the (V - 1, H) weights. :func:`split_tree` cuts the tree into a small
replicated **top** and whole **subtrees** below it: starting from the root, the subtree with the
most rows is split (its root joins the top, its internal children become subtrees) until the
largest holds at most 1/(8P) of the rows below the top, or has no internal child left to split
into (a class of the class tree: its rows stay together). The subtrees then go to ranks
largest first, each to the least-loaded rank (LPT), so the most loaded rank holds at most
1/P + 1/(8P) of them plus the top. A path runs through the top and then, from some node on, lies
in one subtree, so its steps split into replicated ones and ones of a single owner.

Per step (loss, ``log_prob``), with the same targets on every rank: every rank computes the steps
at top nodes alike; each rank computes the steps at the nodes it owns, zero elsewhere, and one
all-reduce of the (N,) partial log-probabilities completes them (the scheme of Megatron-LM's
vocab-parallel cross-entropy, Shoeybi et al. 2019, applied to path sums: replicated input,
per-rank partial outputs summed); backward, one all-reduce of the (N, H) gradient of the hidden
states. Sparse gradients stay on the rank that owns the rows. ``log_softmax`` assembles the
(V - 1, n) node scores of a chunk of n rows with one all-reduce, then runs the one-process
level pass; ``topk`` takes the top-k of that, chunk by chunk (exact, but not the pruned search of
the one-process layer).
"""

from __future__ import annotations

import heapq
from typing import Any

import torch
from torch import Tensor, nn

from bigvocab.distributed.groups import copy_to_shards, group_position, sum_over_shards
from bigvocab.distributed.rows import RowLayout, RowSharded
from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.hsm import HierarchicalSoftmax, row_scores
from bigvocab.outputs.trees import Tree

#: The replicated top grows until no subtree holds more than 1/(SPLIT_FACTOR P) of the rows below it.
SPLIT_FACTOR = 8

#: Owner of the replicated top's nodes in :func:`split_tree`.
TOP = -1


def _subtree_rows(tree: Tree) -> Tensor:
    """(M,) rows (sum of arity - 1) in the subtree of every internal node, the node's own included."""
    below = tree.arity - 1
    # Internal nodes are numbered level by level, so adding each level into its parents, deepest
    # first, accumulates whole subtrees.
    for depth in range(int(tree.node_depth.max()), 0, -1):
        level = (tree.node_depth == depth).nonzero().flatten()
        below.index_add_(0, tree.node_parent[level], below[level])
    return below


def _internal_children(tree: Tree, node: int) -> list[int]:
    kids = tree.children[int(tree.child_offsets[node]) : int(tree.child_offsets[node + 1])]
    return kids[kids < tree.num_nodes].tolist()


def split_tree(tree: Tree, world_size: int) -> Tensor:
    """(M,) owner of every internal node: :data:`TOP` for the replicated top, else a rank (see the
    module docstring for the rule)."""
    below = _subtree_rows(tree)
    frontier = [(-int(below[0]), 0)]
    frontier_rows = int(below[0])
    top = []
    while frontier:
        rows, node = -frontier[0][0], frontier[0][1]
        kids = _internal_children(tree, node)
        if rows * SPLIT_FACTOR * world_size <= frontier_rows or not kids:
            break
        heapq.heappop(frontier)
        top.append(node)
        frontier_rows -= int(tree.arity[node]) - 1
        for kid in kids:
            heapq.heappush(frontier, (-int(below[kid]), kid))
    owner = torch.full((tree.num_nodes,), TOP, dtype=torch.long)
    loads = [(0, rank) for rank in range(world_size)]
    for negative_rows, node in sorted(frontier):  # largest first
        load, rank = heapq.heappop(loads)
        owner[node] = rank
        heapq.heappush(loads, (load - negative_rows, rank))
    # Every node below a subtree's root belongs to its owner; levels go top-down.
    assigned = torch.zeros(tree.num_nodes, dtype=torch.bool)
    assigned[top] = True
    assigned[[node for _, node in frontier]] = True
    for depth in range(1, int(tree.node_depth.max()) + 1):
        level = (tree.node_depth == depth).nonzero().flatten()
        inherit = level[~assigned[level]]
        owner[inherit] = owner[tree.node_parent[inherit]]
    return owner


class VocabParallelHSM(RowSharded, HierarchicalSoftmax):
    """This rank's part of a one-process :class:`HierarchicalSoftmax` split over ``group``.

    ``weight`` (and ``bias``) hold the rows of the top's nodes, then those of this rank's subtrees,
    each in one-process row order; the tree and everything derived from it stay whole.
    """

    # Buffers that _set_tree adds to the one-process layer's: each node's owner, this rank's rows.
    _node_owner: Tensor
    _held_rows: Tensor

    def __init__(self, layer: HierarchicalSoftmax, group: Any) -> None:
        if isinstance(layer, VocabParallelHSM):
            raise ConfigError("this layer is already vocabulary-parallel")
        # The one-process layer is built already (same seed on every rank): take its tree and cut
        # its rows, rather than build and draw a second full set of parameters.
        OutputLayer.__init__(self, layer.in_features, layer.num_classes)
        self.group = group
        self.world_size, self.rank = group_position(group)
        self.zero_init, self.max_chunk_elements = layer.zero_init, layer.max_chunk_elements
        self.weight, self.bias = layer.weight, layer.bias  # whole until the tree says which rows stay
        self._set_tree(layer.tree)
        held = self._held_rows
        self.weight = nn.Parameter(layer.weight.detach()[held].clone(), requires_grad=layer.weight.requires_grad)
        if layer.bias is not None:
            self.bias = nn.Parameter(layer.bias.detach()[held].clone(), requires_grad=layer.bias.requires_grad)

    def _set_tree(self, tree: Tree) -> None:
        """The one-process tree buffers, then which rows this rank holds and where: ``_param_base``
        becomes the local row of each held node's first row."""
        super()._set_tree(tree)
        device = self.weight.device
        node_owner = split_tree(tree, self.world_size)
        row_owner = node_owner[self._param_owner.cpu()]
        top_rows = (row_owner == TOP).nonzero().flatten()
        owned_rows = (row_owner == self.rank).nonzero().flatten()
        self.num_top_rows = top_rows.numel()
        held = torch.cat([top_rows, owned_rows])
        local_of = torch.full((self.num_classes - 1,), -1, dtype=torch.long)
        local_of[held] = torch.arange(held.numel())
        # Rows of the other ranks' nodes are -1 here: no step of this rank ever reads them.
        local_base = local_of[self._param_base.cpu().clamp(0, self.num_classes - 2)]
        buffers = {"_node_owner": node_owner, "_held_rows": held, "_param_base": local_base}
        for name, value in buffers.items():
            self.register_buffer(name, value.to(device), persistent=False)
        # Every rank's rows (one-process indices, top first), so the checkpoint helpers know where each row lives.
        self._rows_per_rank = tuple(
            torch.cat([top_rows, (row_owner == rank).nonzero().flatten()]) for rank in range(self.world_size)
        )

    def sharded_rows(self) -> dict[str, RowLayout]:
        layout = RowLayout(self.group, self.rank, self._rows_per_rank, self.num_classes - 1)
        return {name: layout for name in ("weight", "bias") if getattr(self, name) is not None}

    def engine_unsupported(self) -> str | None:
        return "word2vec's compiled engine trains one process; a vocabulary-parallel hsm trains through torch"

    # ------------------------------------------------------------------ the sharded maths
    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        example, node, position = self._steps(target)
        owner = self._node_owner[node]
        top, mine = owner == TOP, owner == self.rank
        log_p = hidden.new_zeros(target.shape[0]).index_add(
            0, example[top], self._decision_log_probs(hidden, example[top], node[top], position[top])
        )
        shared = copy_to_shards(hidden, self.group)
        partial = shared.new_zeros(target.shape[0]).index_add(
            0, example[mine], self._decision_log_probs(shared, example[mine], node[mine], position[mine])
        )
        # A rank with no step in this batch must still reach the all-reduce in copy_to_shards's
        # backward: the empty slice ties ``shared`` into the graph at zero cost.
        return log_p + sum_over_shards(partial + shared[:0].sum(), self.group)

    def _node_logits(self, h: Tensor) -> Tensor:
        split = self.num_top_rows
        shared = copy_to_shards(h, self.group)
        top = row_scores(self.weight[:split], None if self.bias is None else self.bias[:split], h)
        owned = row_scores(self.weight[split:], None if self.bias is None else self.bias[split:], shared)
        held = self._held_rows
        assembled = h.new_zeros(self.num_classes - 1, h.shape[0]).index_copy(0, held[split:], owned)
        return sum_over_shards(assembled, self.group).index_copy(0, held[:split], top)

    def _example_logits(self, h: Tensor, out: Tensor | None = None) -> Tensor:
        # The compiled exact pass reads (n, V - 1); only the node-major assembly knows every row.
        logits = self._node_logits(h).t()
        return logits if out is None else out.copy_(logits)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            per_chunk = max(1, self.max_chunk_elements // self.num_classes)
            pieces = [
                self._log_softmax(hidden[start : start + per_chunk]).topk(k, dim=1)
                for start in range(0, hidden.shape[0], per_chunk)
            ]
        return torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])

    def extra_repr(self) -> str:
        owned = self._held_rows.numel() - self.num_top_rows
        return (
            super().extra_repr() + f", {self.num_top_rows} replicated top rows and {owned} subtree rows "
            f"on rank {self.rank} of {self.world_size}"
        )
