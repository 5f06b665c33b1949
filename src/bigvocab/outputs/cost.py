"""Cost models: the arithmetic and memory traffic an operation of a layer *must* do.

Each layer declares ``train_cost(target)`` (one training step, forward and backward) and
``log_prob_cost(target)`` (exact log-probabilities of the targets, forward only) as a
:class:`Cost`, from its shape and options alone; the bench's roofline divides them by the
measured time and the machine's rates, and never needs to know which layer it holds. A cost that
several layers share is written here once: :func:`cluster_cost` serves ``adaptive`` and the
bench's PyTorch adaptive peer.

Accounting (the standard one of Kaplan et al. 2020, section 2.1):

* a multiply-add is 2 flops, so scoring one hidden row against one output vector of width H costs
  2H; the backward of a product Y = X W costs two more products of the same size
  (dX = dY W^T, dW = X^T dY), so a training step costs 3x its forward;
* bytes moved count each parameter the operation touches once per pass that reads it (forward,
  and in training the backward's read and the gradient's write: 3 passes; a sparse layer whose
  update is fused into the backward writes the updated row in place of the gradient, so 3 passes
  are its whole step, plus its optimiser's state, :func:`fused_state_cost`), plus the hidden states
  read (and their gradient written in training). A row several pairs score (a tree node on many
  paths, a class drawn twice or also a target) is one row: its later reads can come from cache.
  Activations that stay in cache are not counted, so these are lower bounds on the traffic of a
  real step;
* ``gathered`` is the part of ``bytes`` moved as rows at scattered positions (a sampled or
  tree layer's chosen rows): memory moves those slower than a stream, and the bench's roofline
  prices them at its measured gather/scatter bandwidth, the rest at its streaming bandwidth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torch import Tensor, nn

#: Passes over a touched parameter: forward only, or forward + backward read + gradient write.
PASSES = {False: 1, True: 3}


@dataclass(frozen=True)
class Cost:
    """``flops`` and ``bytes`` (moved to or from memory) of one operation, ``gathered`` of those
    bytes as scattered rows."""

    flops: float
    bytes: float
    gathered: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes, self.gathered + other.gathered)


def dot_cost(
    pairs: float, width: int, parameters: float, *, element_size: int, training: bool, gathered: bool = False
) -> Cost:
    """``pairs`` dot products of ``width`` numbers reading ``parameters`` numbers of weights:
    2·pairs·width flops (x3 in training) and the weights moved once per pass, as scattered rows
    when ``gathered`` (a chosen subset) rather than one stream."""
    passes = PASSES[training]
    moved = float(passes * parameters * element_size)
    return Cost(2.0 * passes * pairs * width, moved, moved if gathered else 0.0)


def fused_state_cost(cost: Cost, state_passes: float) -> Cost:
    """A training step's ``cost`` plus the optimiser state that a fused row update
    (:mod:`bigvocab.outputs.fused`) reads and writes beside each touched row: ``state_passes``
    numbers moved per number of a touched row (SGD 0, Adagrad's sums 2, lazy Adam's two moments 4),
    priced as the rows' own scattered traffic. The rows themselves need no more than the step's
    :data:`PASSES`: the update writes each row in place of the gradient the step would write."""
    extra = cost.gathered / PASSES[True] * state_passes
    return cost + Cost(0.0, extra, extra)


def hidden_cost(rows: int, width: int, *, element_size: int, training: bool) -> Cost:
    """Reading the (rows, width) hidden states, and writing their gradient in training."""
    return Cost(0.0, float((2 if training else 1) * rows * width * element_size))


def cluster_cost(
    head: nn.Linear, edges: Sequence[int], tail: Iterable[nn.Module], target: Tensor, *, training: bool
) -> Cost:
    """Adaptive softmax (Grave et al. 2017, eq. 5): every row pays the head (shortlist + one logit
    per cluster); a row whose target lies in cluster i, ids [edges[i], edges[i + 1]), also pays
    the cluster's projection H -> h_i and its |V_i| outputs of width h_i. ``tail[i]`` holds the
    (projection, output) pair of cluster i, without biases."""
    size = head.weight.element_size()
    rows = target.numel()
    head_weights = sum(p.numel() for p in head.parameters())
    cost = dot_cost(rows, head.weight.numel(), head_weights, element_size=size, training=training)
    cost = cost + hidden_cost(rows, head.in_features, element_size=size, training=training)
    for i, cluster in enumerate(tail):
        in_cluster = int(((target >= edges[i]) & (target < edges[i + 1])).sum())
        if in_cluster:
            width = sum(p.numel() for p in cluster.parameters())
            cost = cost + dot_cost(in_cluster, width, width, element_size=size, training=training)
    return cost
