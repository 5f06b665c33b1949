"""``xmc`` -- a bag-of-features encoder for retrieval and extreme multi-label classification.

An example is a sparse bag of features with values (tf-idf weights, the Extreme Classification
Repository's rows, :class:`~bigvocab.data.xmc.LabelledRows`); the encoder sums the features'
embeddings weighted by their values (fastText's bag, Joulin et al. 2017, "Bag of Tricks for
Efficient Text Classification"), optionally followed by a ReLU layer, and hands the (N, H) result to
the output layer, which ranges over the L labels with the example's (N, T) label set as its
multi-label target. Any registered output layer trains it: ``full``'s softmax over the mixture
of the positives, ``sampled``/``neg``/``bce`` with in-batch or sampled candidates, ``hsm``, ...
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from bigvocab.data.batching import index_batch_count, index_batches
from bigvocab.data.xmc import LabelledRows
from bigvocab.errors import ConfigError, DataError
from bigvocab.models.base import LanguageModel, check_flag
from bigvocab.registry import MODELS
from bigvocab.validation import check_nonnegative_int, check_positive_int


@dataclass
class XMCConfig:
    """Options of :class:`XMCModel`."""

    #: D, the number of feature ids (a run takes it from its data).
    num_features: int = 1
    #: the size of each feature's embedding, and of the bag.
    embedding_dim: int = 64
    #: ReLU units after the bag; 0 feeds the bag to the output layer directly.
    hidden_dim: int = 0
    #: sparse embedding gradients, so a step touches only the rows of the features in the batch.
    sparse: bool = True

    def __post_init__(self) -> None:
        check_positive_int("num_features", self.num_features)
        check_positive_int("embedding_dim", self.embedding_dim)
        check_nonnegative_int("hidden_dim", self.hidden_dim)
        self.sparse = check_flag("sparse", self.sparse)

    def output_features(self) -> int:
        return self.hidden_dim or self.embedding_dim


@MODELS.register("xmc")
class XMCModel(LanguageModel):
    """Bag-of-features encoder over labelled rows (fastText's bag; Joulin et al. 2017).

    Batches: ``{"features": (nnz,) long, "offsets": (N,) long, "weights": (nnz,) float,
    "target": (N, T) long padded with -1}`` (:meth:`LabelledRows.rows`); its data is a
    :class:`~bigvocab.data.xmc.LabelledRows` whose labels are the vocabulary.
    """

    config_class = XMCConfig
    evaluation = "retrieval"

    def __init__(self, vocab_size: int, output, **options: Any) -> None:
        super().__init__(vocab_size, output, **options)
        config = self.config
        self.embedding = nn.EmbeddingBag(config.num_features, config.embedding_dim, mode="sum", sparse=config.sparse)
        self.hidden = nn.Linear(config.embedding_dim, config.hidden_dim) if config.hidden_dim else None

    def batches(
        self, rows: LabelledRows, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """The rows that carry a label (a row without one has nothing to predict), shuffled once
        per call when ``train``, in order otherwise."""
        labelled = self._labelled(rows)
        for chunk in index_batches(
            labelled.numel(), batch_size, shuffle=train, generator=generator, device=labelled.device
        ):
            yield rows.rows(labelled[chunk])

    def num_batches(self, rows: LabelledRows, batch_size: int) -> int:
        return index_batch_count(self._labelled(rows).numel(), batch_size)

    def _labelled(self, rows: LabelledRows) -> Tensor:
        if not isinstance(rows, LabelledRows):
            raise DataError(f"model 'xmc' reads LabelledRows (features and labels), got {type(rows).__name__}")
        if rows.num_labels != self.vocab_size or rows.num_features > self.config.num_features:
            raise DataError(
                f"the rows have {rows.num_labels} labels and {rows.num_features} features; this model has "
                f"{self.vocab_size} labels and {self.config.num_features} features"
            )
        return (rows.labels >= 0).any(1).nonzero().squeeze(1)

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """The bags -> (N, output_features)."""
        bag = self.embedding(batch["features"], batch["offsets"], per_sample_weights=batch["weights"])
        return torch.relu(self.hidden(bag)) if self.hidden is not None else bag

    def topk(self, batch: dict[str, Tensor], k: int) -> tuple[Tensor, Tensor]:
        """The exact top ``k`` labels of each row, (N, k) log-probabilities and ids."""
        return self.output.topk(self.features(batch), k)

    def word_vectors(self) -> Tensor:
        raise ConfigError("model 'xmc' embeds features, not words: it has no word vectors")
