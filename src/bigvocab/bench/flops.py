"""The arithmetic a layer's training step *must* do, and how much the implementation does.

``required`` flops come from a formula per method (:data:`TRAIN_FLOPS`, keyed by registered or
peer name): the multiply-adds of the method's forward pass, times three, because the backward of
a product ``Y = X W`` costs two more products of the same size (dX = dY W^T and dW = X^T dY) --
the standard 1 + 2 accounting of Kaplan et al. (2020), section 2.1. One multiply-add is two
flops, so a layer that scores each of N rows against R output vectors of width H needs
``6 · N · H · R`` flops. Dividing by the step time and by the machine's matmul rate says how
close the step comes to the hardware limit.

``counted`` flops are what the step actually executes in matrix products, counted by
:class:`torch.utils.flop_counter.FlopCounterMode`; a method without a formula reports its
counted flops (and says so), so every row still gets a fraction of the limit.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

from bigvocab.outputs.base import OutputLayer

#: (layer, target (N,)) -> required training-step flops. A formula may raise AttributeError when
#: the layer lacks the structure it reads; the counted flops are used then.
FlopsFormula = Callable[[OutputLayer, Tensor], float]


def _dense(layer: OutputLayer, target: Tensor) -> float:
    """Full softmax: every row is scored against all V output vectors: 6·N·H·V."""
    return 6.0 * target.numel() * layer.in_features * layer.num_classes


def _samples(layer: OutputLayer, target: Tensor) -> float:
    """Sampling methods -- sampled softmax (Bengio & Senécal 2003), NCE (Gutmann & Hyvärinen
    2010), negative sampling (Mikolov et al. 2013): each row is scored against its target and k
    samples, shared or its own: 6·N·H·(k + 1). For adaptive importance sampling (Bengio & Senécal
    2008) this is the first block of k draws, a lower bound: it draws more while the effective
    sample size is low."""
    return 6.0 * target.numel() * layer.in_features * (layer.num_samples + 1)


def _target_vocabulary(layer: OutputLayer, target: Tensor) -> float:
    """Target sampling (Jean et al. 2015): every row is scored against the partition's vocabulary
    V' of max(τ, distinct targets) words: 6·N·H·|V'|."""
    size = max(layer.num_samples, int(torch.unique(target).numel()))
    return 6.0 * target.numel() * layer.in_features * size


def _infrequent(layer: OutputLayer, target: Tensor) -> float:
    """Infrequent normalisation (Andreas & Klein 2015): every row scores its target (6·N·H) and
    m = max(1, round(γN)) rows pay the full normaliser (6·m·H·V)."""
    rows = target.numel()
    chosen = max(1, round(layer.gamma * rows))
    return 6.0 * layer.in_features * (rows + chosen * layer.num_classes)


def _tree(layer: OutputLayer, target: Tensor) -> float:
    """Hierarchical softmax (Morin & Bengio 2005; Mikolov et al. 2013; Goodman 2001 for the class
    tree): a row scores the decision vectors of the nodes on its target's path -- one per binary
    node, arity - 1 per n-ary node: 6·H·Σ_rows (vectors on the path)."""
    tree = layer.tree
    vectors = sum(float((tree.arity[node] - 1).sum()) for _, node, _ in tree.walk_up(target.cpu()))
    return 6.0 * layer.in_features * vectors


def _differentiated(layer: OutputLayer, target: Tensor) -> float:
    """Differentiated softmax (Chen et al. 2015): band b's |V_b| words are scored with its d_b
    hidden units only: 6·N·Σ_b d_b·|V_b|."""
    edges = layer.edges
    per_row = sum(d * (hi - lo) for d, lo, hi in zip(layer.dims, edges, edges[1:]))
    return 6.0 * target.numel() * per_row


def _clusters(head_outputs: int, edges: list[int], tail, target: Tensor, hidden: int) -> float:
    """Adaptive softmax (Grave et al. 2017, eq. 5): every row pays the head (shortlist + one
    logit per cluster); a row whose target lies in cluster i, ids [edges[i], edges[i + 1]), also
    pays the projection H -> h_i and the cluster's |V_i| outputs of width h_i."""
    flops = 6.0 * target.numel() * hidden * head_outputs
    for i, (projection, output) in enumerate(tail):
        in_cluster = int(((target >= edges[i]) & (target < edges[i + 1])).sum())
        flops += 6.0 * in_cluster * (projection.weight.numel() + output.weight.numel())
    return flops


def _adaptive(layer: OutputLayer, target: Tensor) -> float:
    return _clusters(layer.head.out_features, layer.edges, layer.tail, target, layer.in_features)


def _torch_adaptive(layer: OutputLayer, target: Tensor) -> float:
    inner = layer.inner
    return _clusters(inner.head_size, inner.cutoffs, inner.tail, target, layer.in_features)


TRAIN_FLOPS: dict[str, FlopsFormula] = {
    "full": _dense,
    "selfnorm": _dense,  # Devlin et al. (2014) train on the exact log Z (plus a free penalty)
    "torch-linear": _dense,
    "sampled": _samples,
    "ais": _samples,
    "nce": _samples,
    "neg": _samples,
    "target": _target_vocabulary,
    "infreq": _infrequent,
    "hsm": _tree,
    "dsoftmax": _differentiated,
    "adaptive": _adaptive,
    "torch-adaptive": _torch_adaptive,
}


def required_train_flops(method: str, layer: OutputLayer, target: Tensor) -> tuple[Optional[float], str]:
    """(flops, source) from :data:`TRAIN_FLOPS`; (None, reason) when there is no usable formula."""
    formula = TRAIN_FLOPS.get(method)
    if formula is None:
        return None, "no formula"
    try:
        return float(formula(layer, target)), "formula"
    except AttributeError as error:
        return None, f"formula needs {error}"


def counted_flops(step: Callable[[], object]) -> Optional[float]:
    """Matrix-product flops that ``step()`` executes (forward and backward), or None when the
    step runs no product the counter knows."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step()
    total = counter.get_total_flops()
    return float(total) if total else None
