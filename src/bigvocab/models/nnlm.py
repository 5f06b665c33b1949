"""``nnlm`` -- the feed-forward neural language model of Bengio, Ducharme, Vincent & Jauvin (2003),
"A Neural Probabilistic Language Model", JMLR 3.

The previous n words are looked up in a shared table C of m-dimensional feature vectors and
concatenated into x (n·m). The paper's scores are ``y = b + W x + U tanh(d + H x)``; here the
output layer sees ``[tanh(d + H x), x]`` (or only the first part without direct connections), so
its (V, h + n·m) weight is ``[U, W]`` and its bias is b, whatever output method is plugged in.

The stream's first words have fewer than n predecessors: their context is filled with a
dedicated, learned padding vector (row V of the embedding, id ``pad_id``), not with a real word.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from bigvocab.data.batching import check_stream, index_batch_count, index_batches, windows_at
from bigvocab.errors import ConfigError
from bigvocab.models.base import LanguageModel, check_flag
from bigvocab.registry import MODELS
from bigvocab.validation import check_nonnegative_int, check_positive_int


@dataclass
class NNLMConfig:
    """Options of :class:`NNLM` (defaults in the range of the paper's Brown runs: order 5, m=60, h=50)."""

    #: n, previous words the model sees (the paper's n-gram order minus one).
    context: int = 4
    #: m, the size of each word's feature vector.
    embedding_dim: int = 60
    #: h, the tanh hidden units; 0 removes the hidden layer (then ``direct`` must be on).
    hidden_dim: int = 50
    #: direct connections: the output also sees the concatenated feature vectors x (the paper's W x).
    direct: bool = True
    #: sparse embedding gradients, so a step touches only the rows of the words in the batch.
    sparse: bool = True

    def __post_init__(self) -> None:
        check_positive_int("context", self.context)
        check_positive_int("embedding_dim", self.embedding_dim)
        check_nonnegative_int("hidden_dim", self.hidden_dim)
        self.direct = check_flag("direct", self.direct)
        self.sparse = check_flag("sparse", self.sparse)
        if self.hidden_dim == 0 and not self.direct:
            raise ConfigError("nnlm with hidden_dim=0 needs direct=True, or the output layer would see nothing")

    def output_features(self) -> int:
        return self.hidden_dim + (self.context * self.embedding_dim if self.direct else 0)


@MODELS.register("nnlm")
class NNLM(LanguageModel):
    """Bengio et al. (2003) NNLM.

    Batches: ``{"context": (N, n) long, "target": (N,) long}``; the targets are ``ids[1:]``.
    """

    config_class = NNLMConfig

    def __init__(self, vocab_size: int, output, **options) -> None:
        super().__init__(vocab_size, output, **options)
        config = self.config
        self.pad_id = vocab_size
        self.embedding = nn.Embedding(vocab_size + 1, config.embedding_dim, sparse=config.sparse)
        width = config.context * config.embedding_dim
        self.hidden = nn.Linear(width, config.hidden_dim) if config.hidden_dim else None

    def batches(
        self, ids: Tensor, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """n-gram windows predicting ``ids[1:]``; shuffled once per call when ``train``."""
        ids = check_stream(ids, self.vocab_size, min_length=2)
        offsets = torch.arange(-self.config.context, 0, device=ids.device)
        for chunk in index_batches(ids.numel() - 1, batch_size, shuffle=train, generator=generator, device=ids.device):
            positions = chunk + 1
            context, _ = windows_at(ids, positions, offsets, self.pad_id)
            yield {"context": context, "target": ids[positions]}

    def num_batches(self, ids: Tensor, batch_size: int) -> int:
        return index_batch_count(ids.numel() - 1, batch_size)

    def previous_tokens(self, batch: dict[str, Tensor]) -> Tensor:
        """Targets are ``ids[1:]``, so the last context word is always a real token, never the pad."""
        return batch["context"][:, -1]

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """(N, n) context ids -> (N, output_features)."""
        x = self.embedding(batch["context"]).flatten(1)
        parts = []
        if self.hidden is not None:
            parts.append(torch.tanh(self.hidden(x)))
        if self.config.direct:
            parts.append(x)
        return torch.cat(parts, dim=1)
