"""``cw`` -- the window ranking language model of Collobert & Weston (2008), "A Unified Architecture
for Natural Language Processing", and Collobert et al. (2011), "Natural Language Processing
(Almost) from Scratch", JMLR 12.

A window of 2w + 1 words is embedded, concatenated, passed through one hardtanh layer and
reduced to a scalar score ``s(x) = a · hardtanh(M x + b1) + b2``. Training ranks each real window
above the same window with its centre replaced by a random word x~, with the hinge loss
``max(0, 1 - s(x) + s(x~))``. The random word is drawn uniformly over the vocabulary, as in the
papers' sampling of the ranking criterion (it may equal the true word; that term is then a
constant 1 with no gradient). Windows reaching past the stream's ends are filled with a learned
padding vector (row V of the embedding), the papers' PADDING word.

The model has no output layer and gives no normalised distribution, so it has no perplexity;
its product is the word vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from bigvocab.data.batching import check_stream, index_batch_count, index_batches, random_ints, windows_at
from bigvocab.models.base import RankingModel, check_flag
from bigvocab.registry import MODELS
from bigvocab.validation import check_positive_int

#: Seed of the corrupted words when ``batches(train=False)`` is given no generator, so that
#: evaluation batches are the same on every call.
EVAL_SEED = 0


@dataclass
class CWConfig:
    """Options of :class:`CWRanking` (defaults: Collobert et al. 2011, window 11, 50-d words,
    100 hidden units)."""

    #: words on each side of the centre; a window holds 2·window + 1 words.
    window: int = 5
    #: size of each word's vector.
    embedding_dim: int = 50
    #: hardtanh hidden units.
    hidden_dim: int = 100
    #: sparse embedding gradients, so a step touches only the rows of the words in the batch.
    sparse: bool = True

    def __post_init__(self) -> None:
        check_positive_int("window", self.window)
        check_positive_int("embedding_dim", self.embedding_dim)
        check_positive_int("hidden_dim", self.hidden_dim)
        self.sparse = check_flag("sparse", self.sparse)


@MODELS.register("cw")
class CWRanking(RankingModel):
    """Collobert & Weston window ranking model.

    Batches: ``{"window": (N, 2w+1) long, "corrupt": (N,) long, "target": (N,) long}``; every
    position of the stream is a centre once, ``target`` is the centre word and ``corrupt`` the
    random word that replaces it in the negative window.
    """

    config_class = CWConfig

    def __init__(self, vocab_size: int, output: None = None, **options) -> None:
        super().__init__(vocab_size, output, **options)
        config = self.config
        self.pad_id = vocab_size
        self.embedding = nn.Embedding(vocab_size + 1, config.embedding_dim, sparse=config.sparse)
        self.hidden = nn.Linear((2 * config.window + 1) * config.embedding_dim, config.hidden_dim)
        self.score_layer = nn.Linear(config.hidden_dim, 1)

    def batches(
        self, ids: Tensor, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """Windows around every position, shuffled when ``train``, each with a corrupting word
        drawn uniformly from the vocabulary (from ``EVAL_SEED`` when not training and no
        generator is given)."""
        ids = check_stream(ids, self.vocab_size, min_length=1)
        if not train and generator is None:
            generator = torch.Generator().manual_seed(EVAL_SEED)
        width = self.config.window
        offsets = torch.arange(-width, width + 1, device=ids.device)
        for positions in index_batches(ids.numel(), batch_size, shuffle=train, generator=generator, device=ids.device):
            window, _ = windows_at(ids, positions, offsets, self.pad_id)
            corrupt = random_ints(0, self.vocab_size, positions.numel(), generator, ids.device)
            yield {"window": window, "corrupt": corrupt, "target": ids[positions]}

    def num_batches(self, ids: Tensor, batch_size: int) -> int:
        return index_batch_count(ids.numel(), batch_size)

    def score(self, window: Tensor) -> Tensor:
        """(N, 2w+1) window ids -> (N,) scores s(x)."""
        x = self.embedding(window).flatten(1)
        return self.score_layer(nn.functional.hardtanh(self.hidden(x))).squeeze(1)

    def corrupted(self, batch: dict[str, Tensor]) -> Tensor:
        """The batch's windows with the centre replaced by ``batch["corrupt"]``, (N, 2w+1)."""
        window = batch["window"].clone()
        window[:, self.config.window] = batch["corrupt"]
        return window

    def scores(self, batch: dict[str, Tensor]) -> Tensor:
        """(N, 2): the scores of each real window and of its corrupted copy."""
        both = torch.cat([batch["window"], self.corrupted(batch)])
        return self.score(both).view(2, -1).t()

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Mean hinge ranking loss ``max(0, 1 - s(x) + s(x~))`` over the windows."""
        scores = self.scores(batch)
        return torch.relu(1 - scores[:, 0] + scores[:, 1]).mean()
