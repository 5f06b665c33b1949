"""The compiled tree pass's own float32 softplus against float64 softplus."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from bigvocab.kernels.trees import _softplus_float32


def _softplus(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _softplus_float32(x, out, np.empty(x.shape, dtype=np.int32))
    return out


def test_float32_softplus_is_within_four_ulp_of_float64():
    """Every float32 in [-20, 20] at 2^-12 spacing and a wide grid beyond, lengths that are not a
    multiple of the strip. The bound: the polynomials' truncation is under 1e-8 relative, and the
    two-dozen float32 operations round to a few ulp; below x = -87 the pass returns e^-87 for e^x
    (both under float32's smallest normal, 1.2e-38)."""
    x = np.concatenate([np.arange(-20, 20, 2.0**-12), np.linspace(-120, 120, 100_003), [0.0, -0.0]]).astype(np.float32)
    got = _softplus(x).astype(np.float64)
    want = torch.nn.functional.softplus(torch.from_numpy(x).double(), threshold=1000).numpy()
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    error = np.abs(got - want)
    assert np.all(error <= 4 * ulp + 2e-38), (error / ulp).max()


def test_float32_softplus_keeps_nan_and_infinities():
    got = _softplus(np.array([np.nan, np.inf, -np.inf, 100.0, -100.0], dtype=np.float32))
    assert np.isnan(got[0]) and got[1] == np.inf and 0 <= got[2] < 2e-38
    assert got[3] == np.float32(100.0) and 0 <= got[4] < 2e-38
