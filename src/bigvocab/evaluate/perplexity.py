"""Exact perplexity ``exp(-(1/N) Σ log p(w_t | context))`` of any bigvocab language model.

Every target is scored once, in order, through ``model.log_prob``, which each output layer computes
exactly (normalised over the whole vocabulary even when the layer trains on a sampled estimate),
so perplexities of all methods are comparable.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from tqdm.auto import tqdm

from bigvocab.data.xmc import LabelledRows
from bigvocab.errors import DataError, NonFiniteError
from bigvocab.validation import check_positive_int


def batch_to(batch: dict, device: torch.device) -> dict:
    """The batch with its tensors on ``device`` (other values untouched)."""
    return {
        key: value.to(device, non_blocking=True) if isinstance(value, Tensor) else value for key, value in batch.items()
    }


def model_device(model: torch.nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def eval_batches(model, ids: Tensor | LabelledRows, batch_size: int, *, progress: bool = False, desc: str = "evaluate"):
    """Yield ``model.batches(ids, train=False)`` on the model's device, in eval mode (no dropout)
    under ``torch.no_grad``; the model's training mode is restored when the generator ends.
    ``ids`` is a 1-D stream of token ids, or the labelled rows of a model that reads them."""
    check_positive_int("batch_size", batch_size)
    if not isinstance(ids, LabelledRows) and (not isinstance(ids, Tensor) or ids.dim() != 1):
        raise DataError("ids must be a 1-D tensor of token ids (or LabelledRows)")
    device = model_device(model)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            batches = model.batches(ids, batch_size, train=False, generator=None)
            total = model.num_batches(ids, batch_size) if progress else None
            for batch in tqdm(batches, desc=desc, unit="batch", total=total, disable=not progress, leave=False):
                yield batch_to(batch, device)
    finally:
        model.train(was_training)


def total_log_prob(
    model, ids: Tensor | LabelledRows, batch_size: int = 512, *, progress: bool = False
) -> tuple[float, int]:
    """``(Σ log p(target), number of targets)`` over ``model.batches(ids, train=False)``.

    Runs through :func:`eval_batches`. The sum is accumulated in float64 so that millions of
    targets lose no precision.
    """
    total = torch.zeros((), dtype=torch.float64, device=model_device(model))
    count = 0
    for batch in eval_batches(model, ids, batch_size, progress=progress, desc="perplexity"):
        log_probs = model.log_prob(batch)
        total += log_probs.double().sum()  # 0 at a multi-label row's -1 padding
        count += int((batch["target"] >= 0).sum())
    if count == 0:
        raise DataError(f"no targets to evaluate: {len(ids)} tokens or rows give no prediction for this model")
    value = float(total)
    if math.isnan(value):
        raise NonFiniteError("evaluation produced NaN log-probabilities: the model's parameters are not finite")
    return value, count


def perplexity(model, ids: Tensor | LabelledRows, batch_size: int = 512, progress: bool = False) -> float:
    """Exact perplexity of ``model`` on the token ids ``ids`` (1-D LongTensor).

    Args:
        model: a :class:`bigvocab.models.base.LanguageModel` (anything with ``batches`` and
            ``log_prob``).
        ids: (N,) token ids, or labelled rows (the perplexity of their labels, each positive
            scored exactly).
        batch_size: examples per batch. For most models it bounds memory only; for a model that
            carries state along the stream (the LSTM, ``batch_size_shapes_results``) it is the
            number of parallel streams the text is cut into, each starting from a zero state, so
            the perplexity depends on it: evaluate such a model with its training batch size
            (what its validation used, and ``bigvocab eval``'s default for it).
        progress: show a progress bar.
    """
    return perplexity_from(*total_log_prob(model, ids, batch_size, progress=progress))


def perplexity_from(total: float, count: int) -> float:
    """``exp(-total / count)``; inf when it overflows a float."""
    try:
        return math.exp(-total / count)
    except OverflowError:
        return math.inf
