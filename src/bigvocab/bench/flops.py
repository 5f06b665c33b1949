"""The arithmetic a layer's training step *must* do, and how much the implementation does.

``required`` flops (and bytes) are the layer's own declaration, ``layer.train_cost(target)``
(:mod:`bigvocab.outputs.cost`): the multiply-adds of the method's forward pass, times three,
because the backward of a product ``Y = X W`` costs two more products of the same size -- the
standard 1 + 2 accounting of Kaplan et al. (2020), section 2.1. Dividing by the step time and by
the machine's matmul rate says how close the step comes to the hardware limit.

``counted`` flops are what the step actually executes in matrix products, counted by
:class:`torch.utils.flop_counter.FlopCounterMode`; a layer without a cost model reports its
counted flops (and says so), so every row still gets a fraction of the limit.
"""

from __future__ import annotations

from typing import Callable, Optional

from torch import Tensor

from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost


def required_train_cost(layer: OutputLayer, target: Tensor) -> tuple[Optional[Cost], str]:
    """(cost, source) from the layer's cost model; (None, reason) when it declares none."""
    cost = layer.train_cost(target)
    return (None, "no cost model") if cost is None else (cost, "formula")


def counted_flops(step: Callable[[], object]) -> Optional[float]:
    """Matrix-product flops that ``step()`` executes (forward and backward), or None when the
    step runs no product the counter knows."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step()
    total = counter.get_total_flops()
    return float(total) if total else None
