"""``skipgram`` and ``cbow`` -- word2vec (Mikolov, Chen, Corrado & Dean 2013, "Efficient Estimation
of Word Representations in Vector Space"; Mikolov, Sutskever, Chen, Corrado & Dean 2013,
"Distributed Representations of Words and Phrases and their Compositionality").

Only the input side lives here: the embedding, the windows and the subsampling. The output side
is whatever layer is passed in (``neg`` for negative sampling, ``hsm`` with a Huffman tree for
hierarchical softmax, ``full`` for the exact softmax), with ``in_features = vector_size``.
Option names follow gensim (``vector_size``, ``window``, ``sample``, ``cbow_mean``).

Training batches follow word2vec: each pass first drops frequent words at random
(:func:`~bigvocab.data.batching.subsample_keep_prob`), then every remaining word is a centre
whose window is shrunk to b ~ U{1..window} words on each side; the pairs come in stream order
(centre by centre, context left to right). Windows run over the whole stream, sentence ends
included, since the model does not know which id ends a sentence; word2vec.c and gensim stop
windows at sentence ends and drop the words under min_count instead of keeping ``<unk>``. On the
Brown corpus gensim scores the same (within its seed-to-seed spread) on this stream, ``</s>`` and
``<unk>`` included, as on its own sentences. ``train=False`` uses the full window and no
subsampling, so the examples are deterministic and each appears once.

These models train on the torch path below with any output layer. With ``neg`` or ``hsm`` the
compiled engine (:mod:`bigvocab.word2vec`) trains the same tensors by word2vec's own per-example
updates, with sentences and threads, far faster; ``bigvocab train`` and ``bigvocab.Word2Vec`` use
it where it applies.

Skip-gram predicts each context word from the centre (the papers' formulation; word2vec.c
predicts the centre from each context word, which gives the same pairs reversed).

Updates (``word2vec_updates=True``, the default) follow word2vec.c and gensim, so that SGD with
``lr`` = gensim's ``alpha`` takes the steps gensim users expect:

* word2vec makes one SGD step of size alpha per example (a (centre, context) pair, or a CBOW
  window). A minibatch trainer that averages the loss would divide that step by the batch size,
  so :meth:`Word2Vec.loss` returns the mean over the batch (the number the trainer logs) with the
  gradient of the *sum*: one SGD step of rate lr on a batch applies every example's word2vec
  update at once, each of size lr (computed from the same parameters, where word2vec applies
  them one after the other).
* CBOW with ``cbow_mean`` gives every context word the whole error of the averaged hidden vector,
  not the 1/count share the mean's true gradient would give; with sums (``cbow_mean=False``)
  gensim divides the error by the count instead. Both are reproduced: the hidden vector keeps its
  value, and its gradient reaches each context word as through the other reduction.

``word2vec_updates=False`` trains on the true gradient of the mean loss instead (for optimisers
such as Adam, or to compare).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from bigvocab.data.batching import (
    check_stream,
    context_mask,
    index_batch_count,
    rebatch,
    shrunk_radius,
    subsample,
    subsample_keep_prob,
    windows_at,
)
from bigvocab.errors import ConfigError
from bigvocab.models.base import LanguageModel, check_flag
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX, NEGATIVE_SAMPLING, engine_kind_of, layer_for_engine_kind
from bigvocab.registry import MODELS
from bigvocab.validation import check_positive_int

#: Centre words turned into examples at a time (bounds the memory of one chunk).
CENTRES_PER_CHUNK = 1 << 14

#: skipgram and cbow train with gensim's defaults where the user gave no value (their
#: ``run_defaults``, which ``bigvocab train`` applies, and :class:`bigvocab.Word2Vec`): negative
#: sampling, alpha=0.025 decaying linearly to min_alpha=1e-4 by plain SGD (the models make lr a
#: step per example, see above), 5 epochs, min_count=5, and no early stopping (the linear schedule
#: assumes the whole run; word2vec keeps the last vectors). Names are those of ``TrainConfig`` and
#: ``new_run``; patience 0 is "never".
WORD2VEC_DEFAULTS: dict[str, Any] = {
    "lr": 0.025,
    "lr_schedule": "linear",
    "min_lr": 1e-4,
    "optimizer": "sgd",
    "epochs": 5,
    "min_count": 5,
    "patience": 0,
}
#: ... the output layer of negative sampling (the registered layer with this ``engine_kind``) ...
WORD2VEC_DEFAULT_KIND = NEGATIVE_SAMPLING
#: ... and, per ``engine_kind``, word2vec's layer options: a hierarchical softmax's node vectors
#: (syn1) start from zero, without a bias.
WORD2VEC_KIND_OPTIONS = {HIERARCHICAL_SOFTMAX: {"bias": False, "zero_init": True}}
#: ``init`` -> half-width of the input vectors' uniform initial range, times vector_size.
INIT_RANGES = {"word2vec": 0.5, "gensim": 1.0}


def word2vec_defaults() -> dict[str, Any]:
    """:data:`WORD2VEC_DEFAULTS` with the default ``output`` layer's registered name."""
    return {"output": layer_for_engine_kind(WORD2VEC_DEFAULT_KIND), **WORD2VEC_DEFAULTS}


def word2vec_output_options(output: str) -> dict[str, Any]:
    """word2vec's options for the registered output layer ``output`` (empty for most layers)."""
    kind = engine_kind_of(output)
    return dict(WORD2VEC_KIND_OPTIONS.get(kind, {})) if kind is not None else {}


@dataclass
class SkipGramConfig:
    """Options of :class:`SkipGram` (gensim's defaults)."""

    #: dimension of the word vectors (and the output layer's in_features).
    vector_size: int = 100
    #: maximum distance between the centre and a context word.
    window: int = 5
    #: subsampling threshold t; 0 disables it. Needs the training ``counts``.
    sample: float = 1e-3
    #: sparse embedding gradients, so a step touches only the rows of the words in the batch.
    sparse: bool = True
    #: word2vec's update rule: a step of lr per example, CBOW's error copied to each context word
    #: (see the module docstring); False: the true gradient of the mean loss.
    word2vec_updates: bool = True
    #: the input vectors' initial range: "word2vec" (word2vec.c, uniform in [-0.5, 0.5) / vector_size)
    #: or "gensim" (gensim 4, uniform in [-1, 1) / vector_size); small either way, so that the
    #: first dot products are near 0 and the zero output rows move first.
    init: str = "word2vec"

    def __post_init__(self) -> None:
        check_positive_int("vector_size", self.vector_size)
        if self.init not in INIT_RANGES:
            raise ConfigError(f"init must be one of {', '.join(INIT_RANGES)}, got {self.init!r}")
        check_positive_int("window", self.window)
        if isinstance(self.sample, bool) or not isinstance(self.sample, (int, float)) or not 0 <= self.sample < 1:
            raise ConfigError(f"sample must lie in [0, 1), got {self.sample!r}")
        self.sparse = check_flag("sparse", self.sparse)
        self.word2vec_updates = check_flag("word2vec_updates", self.word2vec_updates)

    def output_features(self) -> int:
        return self.vector_size


@dataclass
class CBOWConfig(SkipGramConfig):
    """Options of :class:`CBOW`: those of skip-gram plus ``cbow_mean``."""

    #: average the context vectors (1, the default) or sum them (0).
    cbow_mean: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self.cbow_mean = check_flag("cbow_mean", self.cbow_mean)


class Word2Vec(LanguageModel):
    """What skip-gram and CBOW share: the embedding, subsampling and windows.

    Args:
        counts: training frequency of each word (V,), needed when ``sample > 0``.
    """

    uses_counts = True
    trained_for_vectors = True
    #: Buffer: each word's probability of being kept by subsampling (V,), None when ``sample=0``.
    keep_prob: Tensor | None

    @classmethod
    def run_defaults(cls) -> dict[str, Any]:
        """gensim's defaults (:func:`word2vec_defaults`)."""
        return word2vec_defaults()

    @classmethod
    def output_defaults(cls, output: str) -> dict[str, Any]:
        """word2vec's options for ``output`` (:func:`word2vec_output_options`)."""
        return word2vec_output_options(output)

    def __init__(self, vocab_size: int, output, *, counts: Sequence[int] | Tensor | None = None, **options) -> None:
        super().__init__(vocab_size, output, **options)
        config = self.config
        self.embedding = nn.Embedding(vocab_size, config.vector_size, sparse=config.sparse)
        bound = INIT_RANGES[config.init] / config.vector_size
        nn.init.uniform_(self.embedding.weight, -bound, bound)
        keep = None
        if config.sample > 0:
            if counts is None:
                raise ConfigError(
                    f"{self.model_name()}: sample={config.sample} subsamples frequent words and needs the "
                    "training counts (counts=); pass them or set sample=0"
                )
            if len(counts) != vocab_size:
                raise ConfigError(f"{self.model_name()}: counts has {len(counts)} entries for {vocab_size} words")
            keep = subsample_keep_prob(counts, config.sample)
        self.register_buffer("keep_prob", keep, persistent=False)

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Scalar: the mean loss over the batch's examples; with ``word2vec_updates`` its gradient
        is that of the sum, so that an SGD step of rate lr is word2vec's step of alpha = lr for
        every example."""
        per_example = self.output.loss(self.features(batch), batch["target"], reduction="none")
        if not self.config.word2vec_updates:
            return per_example.mean()
        total = per_example.sum()
        return per_example.mean().detach() + (total - total.detach())

    def num_batches(self, ids: Tensor, batch_size: int) -> int:
        """Exact for ``train=False`` (every token, full windows). A training pass draws shrunk
        windows over a subsampled stream, so it yields at most this many."""
        return index_batch_count(self._full_examples(ids.numel()), batch_size)

    def _full_examples(self, length: int) -> int:
        """Examples of ``batches(train=False)`` over a stream of ``length`` tokens."""
        raise NotImplementedError

    def _chunks(
        self, ids: Tensor, train: bool, generator: torch.Generator | None
    ) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        """(centre ids (C,), context ids (C, 2w), used slots (C, 2w) bool) chunk by chunk."""
        ids = check_stream(ids, self.vocab_size, min_length=2)
        if train and self.keep_prob is not None:
            ids = subsample(ids, self.keep_prob, generator)
        window = self.config.window
        offsets = torch.cat([torch.arange(-window, 0), torch.arange(1, window + 1)]).to(ids.device)
        for start in range(0, ids.numel(), CENTRES_PER_CHUNK):
            positions = torch.arange(start, min(start + CENTRES_PER_CHUNK, ids.numel()), device=ids.device)
            context, inside = windows_at(ids, positions, offsets, 0)  # 0 fills masked slots
            if train:
                radius = shrunk_radius(positions.numel(), window, generator, ids.device)
                inside = context_mask(inside, offsets, radius)
            yield ids[positions], context, inside


@MODELS.register("skipgram")
class SkipGram(Word2Vec):
    """Skip-gram: the hidden state is the centre word's vector, the target one context word.

    Batches: ``{"centre": (N,) long, "target": (N,) long}``, one (centre, context) pair a row.
    """

    config_class = SkipGramConfig

    def batches(
        self, ids: Tensor, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """(centre, context) pairs, ``batch_size`` at a time."""
        pairs = (
            (centres.repeat_interleave(used.sum(1)), context[used])
            for centres, context, used in self._chunks(ids, train, generator)
        )
        for centres, targets in rebatch(pairs, batch_size):
            yield {"centre": centres, "target": targets}

    def _full_examples(self, length: int) -> int:
        # each side of position i has min(i, w) / min(length - 1 - i, w) words: twice the sum of min(i, w)
        window = self.config.window
        if length <= window:
            return length * (length - 1)
        return window * (window - 1) + 2 * (length - window) * window

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """(N,) centre ids -> (N, vector_size)."""
        return self.embedding(batch["centre"])


@MODELS.register("cbow")
class CBOW(Word2Vec):
    """Continuous bag of words: the hidden state is the mean (``cbow_mean``) or the sum of the
    context words' vectors, the target the centre word.

    Batches: ``{"context": (N, 2·window) long, "mask": (N, 2·window) bool, "target": (N,) long}``;
    ``mask`` marks the context slots in use (the window is shrunk and clipped at the stream's ends).
    """

    config_class = CBOWConfig

    def batches(
        self, ids: Tensor, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """One example per centre word that has at least one context word."""
        for context, used, centres in rebatch(self._with_context(ids, train, generator), batch_size):
            yield {"context": context, "mask": used, "target": centres}

    def _full_examples(self, length: int) -> int:
        # every centre of a stream of two or more tokens has a neighbour
        return length if length >= 2 else 0

    def _with_context(
        self, ids: Tensor, train: bool, generator: torch.Generator | None
    ) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        for centres, context, used in self._chunks(ids, train, generator):
            has = used.any(1)
            yield context[has], used[has], centres[has]

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """(N, 2w) context ids and mask -> (N, vector_size)."""
        mask = batch["mask"].unsqueeze(2).to(self.embedding.weight.dtype)
        total = (self.embedding(batch["context"]) * mask).sum(1)
        mean = total / mask.sum(1)
        hidden = mean if self.config.cbow_mean else total
        if not self.config.word2vec_updates:
            return hidden
        # The value of hidden, the gradient of the other reduction (word2vec.c, gensim).
        route = total if self.config.cbow_mean else mean
        return hidden.detach() + (route - route.detach())
