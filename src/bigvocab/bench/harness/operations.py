"""The three operations timed for every layer, on one shared workload.

* ``train`` -- one training step: ``loss`` (mean over N rows), backward to the layer's parameters
  *and* to the hidden states (a real model needs dL/dh), and a plain SGD step. A sparse layer's
  rows take the SGD update inside the backward, as ``bigvocab train`` gives them
  (:func:`make_optimizer`), so a sampled layer's step touches only its rows.
* ``log_softmax`` -- the exact (N', V) log-distribution (what a perplexity or a sampler needs).
* ``topk`` -- the exact 10 best classes of the same N' rows (what decoding needs).
* ``topk_fitted`` -- the same, for the layers whose top-k is a pruned search
  (``topk_by_search``: hsm, adaptive), on a copy of the layer first fitted to those N' rows
  (:data:`FIT_STEPS` Adagrad steps on their targets): the search is only as fast as the
  distribution is peaked, and an untrained layer's is flat, the worst case. Its reference is
  ``full``'s ``topk``, whose cost does not depend on the weights.

N' (test-time rows) is N unless N x V floats exceed a cap: a (N, V) distribution at V = 1M does
not fit in memory for training-sized batches, and test-time batches are smaller anyway.

A benchmark driver outside the bench measures the same things with :func:`bench_layer` (a row's
layer and workload), :func:`training_step` and :func:`make_optimizer`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.selection import candidate_by_label
from bigvocab.bench.harness.side_data import build_layer, synthetic_side_data
from bigvocab.outputs.base import OutputLayer
from bigvocab.train.optimizers import Adagrad

OPERATIONS = ("train", "log_softmax", "topk", "topk_fitted")
#: The operation of ``full`` each operation is paired with.
REFERENCE_OPERATION = {"topk_fitted": "topk"}
TOPK = 10
#: Fitting a search-based layer to the test-time rows before ``topk_fitted``: steps and rate.
FIT_STEPS = 20
FIT_LEARNING_RATE = 0.5
#: small enough that thousands of timed steps keep the weights finite; its value does not change the cost.
LEARNING_RATE = 1e-3


@dataclass
class Workload:
    """The inputs every layer of one V sees: hidden (N, H) leaf with grad, target (N,) drawn from
    the unigram, and eval_hidden (N', H) with N' <= N rows for ``log_softmax`` and ``topk``
    (their targets are the first N' of ``target``)."""

    hidden: Tensor
    target: Tensor
    eval_hidden: Tensor

    @property
    def eval_target(self) -> Tensor:
        return self.target[: self.eval_hidden.shape[0]]

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


def bench_layer(label: str, vocab_size: int, config: BenchConfig | None = None) -> tuple[OutputLayer, Workload]:
    """The layer of the bench's row ``label`` at V = ``vocab_size`` and the workload it is timed on,
    built as the speed suite builds them, so that a driver outside the bench measures what a row
    of ``bigvocab bench`` measures.

    Args:
        label: a row as the bench's table names it: a registered layer (``"nce"``), a variant of
            one (``"hsm[balanced]"``, ``"neg[shared]"``) or a PyTorch peer (``"torch-linear"``);
            an unknown label is a :class:`~bigvocab.errors.ConfigError` naming the closest rows.
        vocab_size: V.
        config: the run whose settings apply -- H (``hidden``), N (``batch``), the cap on N' x V
            (``max_eval_elements``), ``num_samples``, ``seed`` and ``device``; default
            :meth:`BenchConfig.full` (H = 256, N = 1024).

    Returns:
        ``(layer, workload)``: the layer over the synthetic language's counts, spellings and word
        vectors, built after ``torch.manual_seed(config.seed)`` and moved to ``config.device``;
        the workload's (N, H) hidden states, (N,) targets drawn from the counts and (N', H) test
        rows.
    """
    config = BenchConfig.full() if config is None else config
    device = torch.device(config.device)
    side = synthetic_side_data(vocab_size, seed=config.seed)
    eval_rows = evaluation_rows(config.batch, vocab_size, config.max_eval_elements)
    workload = make_workload(side.counts, config.hidden, config.batch, eval_rows, seed=config.seed, device=device)
    torch.manual_seed(config.seed)
    layer, _ = build_layer(candidate_by_label(label), config.hidden, vocab_size, side, num_samples=config.num_samples)
    return layer.to(device), workload


def training_step(layer: OutputLayer, optimizer: torch.optim.Optimizer, workload: Workload) -> None:
    """One training step as the bench times it: ``layer.loss`` (the mean over the workload's N
    rows), backward to the layer's parameters and to the hidden states, then ``optimizer.step()``;
    the gradients of the step before are cleared first."""
    optimizer.zero_grad(set_to_none=True)
    workload.hidden.grad = None
    layer.loss(workload.hidden, workload.target).backward()
    optimizer.step()


def make_optimizer(layer: OutputLayer, *, fused: bool = True) -> torch.optim.Optimizer:
    """The optimiser of the bench's training steps: plain SGD at :data:`LEARNING_RATE` over the
    layer's trainable parameters. With ``fused`` (what ``bigvocab train`` does) a layer's sparse
    parameters on the CPU in float32/float64 are updated inside the backward
    (``OutputLayer.fuse_optimizer``), and the returned SGD holds the others; otherwise SGD applies
    their sparse gradients row by row after the backward."""
    sparse = layer.sparse_parameters()
    if fused and sparse and all(p.device.type == "cpu" and p.dtype in (torch.float32, torch.float64) for p in sparse):
        fused_optimizer = layer.fuse_optimizer("sgd", lr=LEARNING_RATE)
        rest = [p for p in layer.parameters() if p.requires_grad and all(p is not q for q in sparse)]
        return torch.optim.SGD(rest, lr=LEARNING_RATE) if rest else fused_optimizer
    return torch.optim.SGD([p for p in layer.parameters() if p.requires_grad], lr=LEARNING_RATE)


def fitted_copy(layer: OutputLayer, workload: Workload) -> tuple[OutputLayer, float]:
    """A copy of ``layer`` trained on the test-time rows and their targets, and the mean
    probability it then gives those targets (how peaked it became)."""
    fitted = copy.deepcopy(layer).train()
    optimizer = Adagrad([p for p in fitted.parameters() if p.requires_grad], lr=FIT_LEARNING_RATE)
    hidden, target = workload.eval_hidden, workload.eval_target
    for _ in range(FIT_STEPS):
        optimizer.zero_grad(set_to_none=True)
        fitted.loss(hidden, target).backward()
        optimizer.step()
    fitted.eval()
    with torch.no_grad():
        target_probability = float(fitted.log_prob(hidden, target).exp().mean())
    return fitted, target_probability


def layer_operations(layer: OutputLayer, workload: Workload) -> dict[str, Callable[[], object]]:
    """Closures ``{"train", "log_softmax", "topk"}`` over ``layer`` and ``workload``, and
    ``"topk_fitted"`` (a :class:`FittedTopk`) for a layer whose top-k is a search."""
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

    operations: dict[str, Callable[[], object]] = {"train": train, "log_softmax": log_softmax, "topk": topk}
    if layer.topk_by_search:
        operations["topk_fitted"] = FittedTopk(layer, workload)
    return operations


class FittedTopk:
    """``topk`` of :func:`fitted_copy` of the layer. :meth:`fit` makes the copy (the bench calls
    it before any timing); a call without it fits first."""

    def __init__(self, layer: OutputLayer, workload: Workload) -> None:
        self.layer, self.workload = layer, workload
        self.fitted: OutputLayer | None = None
        self.target_probability: float | None = None

    def fit(self) -> OutputLayer:
        """Make the fitted copy (and its :attr:`target_probability`); returns the copy."""
        self.fitted, self.target_probability = fitted_copy(self.layer, self.workload)
        return self.fitted

    def fitted_layer(self) -> OutputLayer:
        """The fitted copy, made by :meth:`fit` on first use."""
        return self.fitted if self.fitted is not None else self.fit()

    def __call__(self) -> tuple[Tensor, Tensor]:
        fitted = self.fitted_layer()  # fitting trains: outside no_grad
        with torch.no_grad():
            return fitted.topk(self.workload.eval_hidden, TOPK)
