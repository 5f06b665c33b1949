"""``bigvocab.Word2Vec``: gensim 4's ``Word2Vec`` interface over a bigvocab ``skipgram``/``cbow`` model.

A gensim script runs after changing only its import: the constructor takes gensim's keywords
and defaults, ``build_vocab`` then ``train`` work as in gensim's tutorials, ``.wv`` is a
:class:`~bigvocab.word2vec.keyed_vectors.KeyedVectors`. Underneath, ``.module`` is an ordinary
bigvocab model (:func:`bigvocab.models.build_model`) with a ``neg`` or ``hsm`` output layer,
trained in place by the compiled engine (:mod:`bigvocab.word2vec.engine`); ``output=`` any other
registered layer (``nce``, ``sampled``, ``full``, ...) trains the same model on the torch path.

Differences from gensim, each deliberate:

* one output layer: ``hs=1`` uses the hierarchical softmax only (gensim would also train a
  negative-sampling layer when ``negative > 0``), with a warning;
* ``unk="<unk>"`` keeps the words under ``min_count`` as one token instead of dropping them;
* ``hogbatch=True`` (skip-gram + negative sampling) shares one negative set per window
  (Ji et al. 2016);
* the torch path (``output=`` another layer) reads the stream without sentence ends, so its
  windows cross them (see :mod:`bigvocab.models.word2vec`).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bigvocab.errors import CheckpointError, ConfigError, DataError
from bigvocab.models import build_model
from bigvocab.models.base import LanguageModel, WordModel
from bigvocab.models.word2vec import WORD2VEC_DEFAULTS, word2vec_output_options
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX, NEGATIVE_SAMPLING, engine_kind_of, layer_for_engine_kind
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_int
from bigvocab.word2vec import corpus as corpus_io
from bigvocab.word2vec.engine import CHUNK_WORDS, Schedule, engine_arrays, engine_unsupported, progress_bar, train_epoch
from bigvocab.word2vec.keyed_vectors import KeyedVectors

PathLike = str | os.PathLike
_SAVE_FORMAT = "bigvocab.Word2Vec/1"


def _check_choice(name: str, value: object, choices: tuple) -> Any:
    if isinstance(value, bool):
        value = int(value)
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def _check_number(
    name: str, value: object, low: float, high: float = float("inf"), *, closed_high: bool = True
) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not low <= value <= high
        or (not closed_high and value == high)
    ):
        bound = f"[{low}, {high}{']' if closed_high else ')'}"
        raise ConfigError(f"{name} must be a number in {bound}, got {value!r}")
    return float(value)


class Word2Vec:
    """Skip-gram or CBOW with gensim's interface (Mikolov et al. 2013).

    gensim's keywords and defaults: ``sentences`` (an iterable of lists of str, read more than
    once) or ``corpus_file`` (one sentence a line), ``vector_size``, ``window``, ``min_count``,
    ``sg``, ``hs``, ``negative``, ``ns_exponent``, ``cbow_mean``, ``sample``, ``alpha``,
    ``min_alpha``, ``epochs``, ``workers`` (Hogwild! threads), ``seed``, ``max_final_vocab``,
    ``shrink_windows``, ``batch_words``. Given a corpus, the constructor builds the vocabulary and
    trains, as gensim's does.

    bigvocab's own keywords: ``output`` (a registered output layer name; default ``neg``, or
    ``hsm`` with ``hs=1``), ``output_options`` (its keyword options), ``hogbatch``, ``unk``,
    ``engine`` (False: the torch path even for ``neg``/``hsm``, to compare), ``progress`` (a tqdm
    bar with words/s and the ETA on stderr).
    """

    def __init__(
        self,
        sentences: Iterable[Sequence[str]] | None = None,
        corpus_file: PathLike | None = None,
        vector_size: int = 100,
        alpha: float = 0.025,
        window: int = 5,
        min_count: int = 5,
        max_vocab_size: int | None = None,
        sample: float = 1e-3,
        seed: int = 1,
        workers: int = 3,
        min_alpha: float = 0.0001,
        sg: int = 0,
        hs: int = 0,
        negative: int = 5,
        ns_exponent: float = 0.75,
        cbow_mean: int = 1,
        hashfxn: Any = hash,
        epochs: int = 5,
        null_word: int = 0,
        trim_rule: Any = None,
        sorted_vocab: int = 1,
        batch_words: int = CHUNK_WORDS,
        compute_loss: bool = False,
        callbacks: Sequence[Any] = (),
        comment: str | None = None,
        max_final_vocab: int | None = None,
        shrink_windows: bool = True,
        *,
        output: str | None = None,
        output_options: Mapping[str, Any] | None = None,
        hogbatch: bool = False,
        unk: str | None = None,
        engine: bool = True,
        progress: bool = True,
    ) -> None:
        for name, value, default in (
            ("max_vocab_size", max_vocab_size, None),
            ("trim_rule", trim_rule, None),
            ("compute_loss", compute_loss, False),
            ("callbacks", tuple(callbacks), ()),
        ):
            if value != default:
                raise ConfigError(f"{name}={value!r} is not supported by bigvocab.Word2Vec (leave it at {default!r})")
        self.vector_size = check_positive_int("vector_size", vector_size)
        self.window = check_positive_int("window", window)
        self.epochs = check_positive_int("epochs", epochs)
        self.workers = check_positive_int("workers", workers)
        self.batch_words = check_positive_int("batch_words", batch_words)
        self.min_count = int(_check_number("min_count", min_count, 0))
        self.sample = _check_number("sample", sample, 0, 1, closed_high=False)
        self.alpha = _check_number("alpha", alpha, 0)
        self.min_alpha = _check_number("min_alpha", min_alpha, 0, self.alpha)
        self.ns_exponent = _check_number("ns_exponent", ns_exponent, -float("inf"), float("inf"), closed_high=False)
        self.negative = int(_check_number("negative", negative, 0))
        self.sg = _check_choice("sg", sg, (0, 1))
        self.hs = _check_choice("hs", hs, (0, 1))
        self.cbow_mean = _check_choice("cbow_mean", cbow_mean, (0, 1))
        self.seed = int(_check_number("seed", seed, 0))
        self.max_final_vocab = (
            None if max_final_vocab is None else check_positive_int("max_final_vocab", max_final_vocab)
        )
        self.shrink_windows = bool(shrink_windows)
        self.hogbatch = bool(hogbatch)
        self.unk = unk
        self.engine = bool(engine)
        self.progress = bool(progress)
        self.output_options = dict(output_options or {})
        self.output = self._choose_output(output)
        if self.hogbatch and not (self.sg and engine_kind_of(self.output) == NEGATIVE_SAMPLING):
            raise ConfigError(
                "hogbatch=True shares negatives within a skip-gram window: it needs sg=1 and negative sampling (hs=0)"
            )
        self.module: WordModel | None = None  # the bigvocab model, built by build_vocab
        self.wv: KeyedVectors | None = None
        self.corpus_count = 0
        self.corpus_total_words = 0
        self.epochs_trained = 0
        self._tmp: tempfile.TemporaryDirectory | None = None
        if sentences is not None and corpus_file is not None:
            raise ConfigError("give sentences or corpus_file, not both")
        if sentences is not None or corpus_file is not None:
            self.build_vocab(sentences, corpus_file=corpus_file)
            self.train(
                sentences,
                corpus_file=corpus_file,
                total_examples=self.corpus_count,
                total_words=self.corpus_total_words,
                epochs=self.epochs,
            )

    def _choose_output(self, output: str | None) -> str:
        if output is not None:
            OUTPUTS.get(output)  # an unknown name names the closest
            return output
        if self.hs and self.negative:
            warnings.warn(
                f"bigvocab trains one output layer: hs=1 uses the hierarchical softmax only, without "
                f"gensim's extra negative sampling (negative={self.negative}); pass negative=0 to silence this",
                stacklevel=3,
            )
        if not self.hs and not self.negative:
            raise ConfigError(
                "negative=0 with hs=0 trains no output layer: set negative > 0 (negative sampling) "
                "or hs=1 (hierarchical softmax)"
            )
        return layer_for_engine_kind(HIERARCHICAL_SOFTMAX if self.hs else NEGATIVE_SAMPLING)

    # ------------------------------------------------------------------ vocabulary
    def build_vocab(
        self,
        corpus_iterable: Iterable[Sequence[str]] | None = None,
        corpus_file: PathLike | None = None,
        update: bool = False,
        progress_per: int = 10000,
        keep_raw_vocab: bool = False,
        trim_rule: Any = None,
        **kwargs: Any,
    ) -> None:
        """Count the words, keep those with at least ``min_count`` occurrences (by descending
        count) and build the model with fresh weights (seeded by ``seed``)."""
        if update:
            raise ConfigError("update=True (growing a trained vocabulary) is not supported by bigvocab.Word2Vec")
        if trim_rule is not None:
            raise ConfigError("trim_rule is not supported by bigvocab.Word2Vec")
        found = corpus_io.scan(self._sentences(corpus_iterable, corpus_file))
        words, counts = corpus_io.keep_words(found, self.min_count, self.max_final_vocab, self.unk)
        self.corpus_count, self.corpus_total_words = found.sentences, found.words
        self._build(words, counts)
        self._index = corpus_io.encoding_index(found, words, self.unk)

    def _build(self, words: list[str], counts: list[int]) -> None:
        torch.manual_seed(self.seed)
        # gensim 4's initial range, which trained closer to gensim's quality on Brown than word2vec.c's
        model_kwargs: dict[str, Any] = {
            "vector_size": self.vector_size,
            "window": self.window,
            "sample": self.sample,
            "init": "gensim",
        }
        if not self.sg:
            model_kwargs["cbow_mean"] = bool(self.cbow_mean)
        output_kwargs = word2vec_output_options(self.output)
        if engine_kind_of(self.output) == NEGATIVE_SAMPLING:
            # neg refuses k >= V (the full softmax done badly); gensim allows it on toy vocabularies
            output_kwargs.update(num_samples=min(self.negative, len(words) - 1), ns_exponent=self.ns_exponent)
        output_kwargs.update(self.output_options)
        self.module = build_model(
            "skipgram" if self.sg else "cbow",
            len(words),
            self.output,
            counts=counts,
            words=words,
            model_kwargs=model_kwargs,
            output_kwargs=output_kwargs,
        )
        self.counts = list(counts)
        self.wv = KeyedVectors(words, self.module.embedding.weight.detach())
        self._index = dict(self.wv.key_to_index)

    @property
    def _module(self) -> WordModel:
        if self.module is None:
            raise DataError("the model is not built yet: build the vocabulary first (build_vocab)")
        return self.module

    @property
    def _vectors(self) -> KeyedVectors:
        if self.wv is None:
            raise DataError("there are no word vectors yet: build the vocabulary first (build_vocab)")
        return self.wv

    @property
    def uses_engine(self) -> bool:
        """True when the compiled engine trains this model (``neg`` or ``hsm``), False for the torch path."""
        return self.engine and self.module is not None and engine_unsupported(self.module) is None

    @property
    def syn1neg(self) -> np.ndarray | None:
        """gensim's output vectors of negative sampling (a view), or None."""
        return self._engine_rows(NEGATIVE_SAMPLING)

    @property
    def syn1(self) -> np.ndarray | None:
        """gensim's Huffman-tree node vectors (a view), or None."""
        return self._engine_rows(HIERARCHICAL_SOFTMAX)

    def _engine_rows(self, kind: str) -> np.ndarray | None:
        """The output layer's rows (a view) when it is word2vec's layer ``kind`` (see
        :mod:`bigvocab.outputs.engine`), else None."""
        output = self.module.output if isinstance(self.module, LanguageModel) else None
        if output is None or output.engine_kind != kind or output.engine_unsupported() is not None:
            return None
        return output.engine_tables().rows.detach().numpy()

    # ------------------------------------------------------------------ training
    def train(
        self,
        corpus_iterable: Iterable[Sequence[str]] | None = None,
        corpus_file: PathLike | None = None,
        total_examples: int | None = None,
        total_words: int | None = None,
        epochs: int | None = None,
        start_alpha: float | None = None,
        end_alpha: float | None = None,
        word_count: int = 0,
        queue_factor: int = 2,
        report_delay: float = 1.0,
        compute_loss: bool = False,
        callbacks: Sequence = (),
        **kwargs: Any,
    ) -> tuple[int, int]:
        """``epochs`` passes over the corpus, the learning rate decaying linearly from
        ``start_alpha`` (default ``alpha``) to ``end_alpha`` (``min_alpha``) over all of them.
        As gensim, ``total_examples`` or ``total_words`` and ``epochs`` must be given (the
        engine counts the words itself). Returns (words kept by the subsampling, words read)."""
        if self.module is None:
            raise DataError("you must first build vocabulary before training the model (call build_vocab)")
        if (corpus_iterable is None) == (corpus_file is None):
            raise ConfigError("train needs corpus_iterable or corpus_file (exactly one)")
        if corpus_iterable is not None and total_examples is None and total_words is None:
            raise ConfigError(
                "you must specify either total_examples or total_words, for the progress and the "
                "learning rate (usually total_examples=model.corpus_count)"
            )
        if epochs is None:
            raise ConfigError("you must specify an explicit epochs count (usually epochs=model.epochs)")
        epochs = check_positive_int("epochs", epochs)
        alpha = self.alpha if start_alpha is None else _check_number("start_alpha", start_alpha, 0)
        min_alpha = self.min_alpha if end_alpha is None else _check_number("end_alpha", end_alpha, 0, alpha)
        stream, words = self._stream(corpus_iterable, corpus_file)
        if words == 0:  # gensim trains nothing and warns
            warnings.warn("the training corpus holds no word of the vocabulary; nothing was trained", stacklevel=2)
            return 0, 0
        if self.uses_engine:
            kept = self._train_engine(stream, words, epochs, alpha, min_alpha)
        else:
            kept = self._train_torch(stream, epochs, alpha, min_alpha)
        self.epochs_trained += epochs
        self._vectors.fill_norms()
        return kept, words * epochs

    def _train_engine(self, stream: np.ndarray, words: int, epochs: int, alpha: float, min_alpha: float) -> int:
        arrays = engine_arrays(self.module)
        schedule = Schedule(alpha, min_alpha, words * epochs)
        kept = 0
        with progress_bar(words * epochs, self.progress) as bar:
            for epoch in range(epochs):
                bar.set_description(f"epoch {epoch + 1}/{epochs}")
                done = train_epoch(
                    arrays,
                    stream,
                    schedule=schedule,
                    words_before=epoch * words,
                    epoch=self.epochs_trained + epoch,
                    workers=self.workers,
                    seed=self.seed,
                    shrink=self.shrink_windows,
                    shared=self.hogbatch,
                    chunk_words=self.batch_words,
                    bar=bar,
                )
                kept += done.kept
        return kept

    def _train_torch(self, stream: np.ndarray, epochs: int, alpha: float, min_alpha: float) -> int:
        """The torch path (any output layer): word2vec's update rule by minibatch SGD."""
        from bigvocab.train import TrainConfig, Trainer

        ids = torch.from_numpy(np.asarray(stream[stream >= 0], dtype=np.int64))
        options = {k: v for k, v in WORD2VEC_DEFAULTS.items() if k in ("optimizer", "lr_schedule")}
        config = TrainConfig(
            epochs=epochs, lr=alpha, min_lr=min_alpha, patience=None, seed=self.seed, progress=self.progress, **options
        )
        Trainer(self._module, ids, None, config).fit()
        return int(ids.numel()) * epochs

    # ------------------------------------------------------------------ corpus
    def _sentences(self, corpus_iterable, corpus_file) -> Iterable[Sequence[str]]:
        if (corpus_iterable is None) == (corpus_file is None):
            raise ConfigError("give sentences (corpus_iterable) or corpus_file, exactly one")
        if corpus_file is not None:
            return corpus_io.iter_file(corpus_file)
        return corpus_io.iter_sentences(corpus_iterable)

    def _stream(self, corpus_iterable, corpus_file) -> tuple[np.ndarray, int]:
        sentences = self._sentences(corpus_iterable, corpus_file)
        unseen = self._vectors.key_to_index[self.unk] if self.unk is not None else corpus_io.DROP
        if corpus_file is None:
            return corpus_io.encode(sentences, self._index, unseen)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="bigvocab-w2v-")
        return corpus_io.encode_to_file(sentences, self._index, Path(self._tmp.name) / "stream.i32", unseen)

    # ------------------------------------------------------------------ files
    def save(self, fname_or_handle: PathLike, **kwargs: Any) -> None:
        """Everything needed to go on training or querying: options, vocabulary, weights."""
        if self.module is None:
            raise DataError("nothing to save: build the vocabulary first")
        state = {
            key: value for key, value in vars(self).items() if key not in ("module", "wv", "_tmp", "counts", "_index")
        }
        torch.save(
            {
                "format": _SAVE_FORMAT,
                "options": state,
                "words": self._vectors.index_to_key,
                "counts": self.counts,
                "module": self.module.state_dict(),
            },
            fname_or_handle,
        )

    @classmethod
    def load(cls, fname: PathLike, *args: Any, **kwargs: Any) -> Word2Vec:
        try:
            saved = torch.load(fname, map_location="cpu", weights_only=False)
        except FileNotFoundError:
            raise CheckpointError(f"model file {str(fname)!r} does not exist") from None
        if not isinstance(saved, dict) or saved.get("format") != _SAVE_FORMAT:
            raise CheckpointError(f"{str(fname)!r} was not written by bigvocab.Word2Vec.save")
        model = cls.__new__(cls)
        vars(model).update(saved["options"])
        model._tmp = None
        model._build(saved["words"], saved["counts"])
        model._module.load_state_dict(saved["module"])
        return model

    def __repr__(self) -> str:
        size = len(self.wv) if self.wv is not None else 0
        return f"Word2Vec<vocab={size}, vector_size={self.vector_size}, alpha={self.alpha}>"
