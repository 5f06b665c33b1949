"""Assertions shared by the output-layer tests that hold a layer against a brute-force reference
or test a statistical trend; the tolerances are float64 round-off."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def assert_matches_reference(ours: torch.Tensor, reference: torch.Tensor, inputs: Sequence[torch.Tensor]) -> None:
    """``ours`` equals ``reference``, and so do the gradients of their sums with respect to
    ``inputs``: sparse ones are densified, and an input the reference does not reach counts as a
    zero gradient (the reference may be built from only some of the layer's parameters)."""
    torch.testing.assert_close(ours, reference, atol=1e-12, rtol=1e-12)
    got = torch.autograd.grad(ours.sum(), inputs)
    want = torch.autograd.grad(reference.sum(), inputs, allow_unused=True, materialize_grads=True)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.to_dense(), w.to_dense(), atol=1e-12, rtol=1e-10)


def assert_topk_is_exact(layer, hidden: torch.Tensor, k: int) -> None:
    """``layer.topk`` returns the k best rows of the layer's own ``log_softmax``, ids included."""
    values, ids = layer.topk(hidden, k)
    ref_values, ref_ids = layer.log_softmax(hidden).topk(k, dim=1)
    torch.testing.assert_close(values, ref_values, atol=1e-12, rtol=0)
    assert torch.equal(ids, ref_ids)


def assert_mean_exceeds(high: torch.Tensor, low: torch.Tensor, sigmas: float, note: object = None) -> None:
    """Two-sample comparison of means over repetitions: mean(high) - mean(low) must exceed
    ``sigmas`` standard errors of the difference, sqrt(var_high / R_high + var_low / R_low)."""
    standard_error = math.sqrt(float(high.var() / high.numel() + low.var() / low.numel()))
    assert float(high.mean() - low.mean()) > sigmas * standard_error, note
