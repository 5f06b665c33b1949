"""The three operations timed for every layer, on one shared workload.

* ``train`` -- one training step: ``loss`` (mean over N rows), backward to the layer's parameters
  *and* to the hidden states (a real model needs dL/dh), and a plain SGD step. SGD without
  momentum applies sparse gradients row by row, so a sampled layer's step touches only its rows.
* ``log_softmax`` -- the exact (N', V) log-distribution (what a perplexity or a sampler needs).
* ``topk`` -- the exact 10 best classes of the same N' rows (what decoding needs).

N' (test-time rows) is N unless N x V floats exceed a cap: a (N, V) distribution at V = 1M does
not fit in memory for training-sized batches, and test-time batches are smaller anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

from bigvocab.outputs.base import OutputLayer

OPERATIONS = ("train", "log_softmax", "topk")
TOPK = 10
#: small enough that thousands of timed steps keep the weights finite; its value does not change the cost.
LEARNING_RATE = 1e-3


@dataclass
class Workload:
    """The inputs every layer of one V sees: hidden (N, H) leaf with grad, target (N,) drawn from
    the unigram, and eval_hidden (N', H) with N' <= N rows for ``log_softmax`` and ``topk``."""

    hidden: Tensor
    target: Tensor
    eval_hidden: Tensor

    @property
    def num_rows(self) -> int:
        return self.hidden.shape[0]


def make_workload(
    counts: Sequence[int],
    hidden_size: int,
    num_rows: int,
    eval_rows: int,
    *,
    seed: int,
    device: torch.device,
) -> Workload:
    """Targets follow the training frequencies, as they do in a real corpus: tree paths,
    adaptive clusters and accidental hits all depend on which words are asked for."""
    generator = torch.Generator().manual_seed(seed)
    probs = torch.tensor(counts, dtype=torch.float64)
    target = torch.multinomial(probs, num_rows, replacement=True, generator=generator)
    hidden = torch.randn(num_rows, hidden_size, generator=generator)
    return Workload(
        hidden=hidden.to(device).requires_grad_(True),
        target=target.to(device),
        eval_hidden=hidden[:eval_rows].to(device),
    )


def evaluation_rows(num_rows: int, num_classes: int, max_elements: int) -> int:
    """N', the rows of the test-time timings: N unless N x V floats exceed ``max_elements``."""
    return max(1, min(num_rows, max_elements // num_classes))


def training_step(layer: OutputLayer, optimizer: torch.optim.Optimizer, workload: Workload) -> None:
    optimizer.zero_grad(set_to_none=True)
    workload.hidden.grad = None
    layer.loss(workload.hidden, workload.target).backward()
    optimizer.step()


def make_optimizer(layer: OutputLayer) -> torch.optim.Optimizer:
    return torch.optim.SGD([p for p in layer.parameters() if p.requires_grad], lr=LEARNING_RATE)


def layer_operations(layer: OutputLayer, workload: Workload) -> dict[str, Callable[[], object]]:
    """Closures ``{"train", "log_softmax", "topk"}`` over ``layer`` and ``workload``."""
    optimizer = make_optimizer(layer)

    def train() -> None:
        layer.train()
        training_step(layer, optimizer, workload)

    def log_softmax() -> Tensor:
        layer.eval()
        with torch.no_grad():
            return layer.log_softmax(workload.eval_hidden)

    def topk() -> tuple[Tensor, Tensor]:
        layer.eval()
        with torch.no_grad():
            return layer.topk(workload.eval_hidden, TOPK)

    return {"train": train, "log_softmax": log_softmax, "topk": topk}
