"""Fixtures of the trainer tests (the stub model lives in bigram_stub.py)."""

from __future__ import annotations

import pytest
import torch
from bigram_stub import BigramStub, bigram_stream
from torch import Tensor


@pytest.fixture(scope="session")
def corpus() -> tuple[Tensor, Tensor]:
    return bigram_stream(600, seed=1), bigram_stream(200, seed=2)


@pytest.fixture
def make_model():
    def make(**kwargs) -> BigramStub:
        torch.manual_seed(0)
        return BigramStub(**kwargs)

    return make
