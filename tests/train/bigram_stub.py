"""A tiny LanguageModel-like stub for the trainer tests, and a corpus it can learn.

The stub is a bigram model ``p(w_t | w_{t-1}) = softmax(W · dropout(E[w_{t-1}]) + b)`` with the
real ``full`` output layer. It has everything the trainer relies on: shuffled batches drawn from
the generator it is given, dropout (draws from the global RNG, so resume must restore it), a
sparse embedding, and a switch that makes the loss NaN from a chosen step on.
(A uniquely named module rather than conftest.py, so that importing it is unambiguous.)
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from bigvocab.outputs.full import FullSoftmax

VOCAB = 12


class BigramStub(nn.Module):
    has_distribution = True

    def __init__(self, vocab_size: int = VOCAB, dim: int = 8, *, sparse: bool = True, dropout: float = 0.1) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, sparse=sparse)
        self.dropout = nn.Dropout(dropout)
        self.output = FullSoftmax(dim, vocab_size)
        self.nan_from_call: int | None = None
        self.calls = 0

    def batches(self, ids: Tensor, batch_size: int, *, train: bool, generator=None) -> Iterator[dict]:
        positions = torch.arange(1, ids.numel())
        if train:
            positions = positions[torch.randperm(positions.numel(), generator=generator)]
        for start in range(0, positions.numel(), batch_size):
            chunk = positions[start : start + batch_size]
            yield {"context": ids[chunk - 1], "target": ids[chunk], "position": chunk}

    def num_batches(self, ids: Tensor, batch_size: int) -> int:
        return -(-(ids.numel() - 1) // batch_size)

    def _hidden(self, batch: dict) -> Tensor:
        return self.dropout(self.embedding(batch["context"]))

    def loss(self, batch: dict) -> Tensor:
        self.calls += 1
        loss = self.output.loss(self._hidden(batch), batch["target"])
        if self.nan_from_call is not None and self.calls >= self.nan_from_call:
            loss = loss * float("nan")
        return loss

    def log_prob(self, batch: dict) -> Tensor:
        return self.output.log_prob(self._hidden(batch), batch["target"])

    def word_vectors(self) -> Tensor:
        return self.embedding.weight.detach()

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [self.embedding.weight] if self.embedding.sparse else []


def bigram_stream(num_tokens: int, seed: int) -> Tensor:
    """Ids from a fixed random bigram chain whose rows are peaked (entropy well below log V), so
    a bigram model can cut its perplexity far below V within a few epochs."""
    generator = torch.Generator().manual_seed(1234)
    transitions = torch.softmax(3.0 * torch.randn(VOCAB, VOCAB, generator=generator), dim=1)
    sampler = torch.Generator().manual_seed(seed)
    ids = torch.empty(num_tokens, dtype=torch.long)
    ids[0] = 0
    for t in range(1, num_tokens):
        ids[t] = torch.multinomial(transitions[ids[t - 1]], 1, generator=sampler)
    return ids
