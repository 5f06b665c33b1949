"""``bigvocab.Word2Vec``: gensim 4's ``Word2Vec`` interface over a bigvocab ``skipgram``/``cbow`` model.

A gensim script runs after changing only its import: the constructor takes gensim's keywords
and defaults, ``build_vocab`` then ``train`` work as in gensim's tutorials, ``.wv`` is a
:class:`~bigvocab.word2vec.keyed_vectors.KeyedVectors`. Underneath, ``.module`` is an ordinary
bigvocab model (:func:`bigvocab.models.build_model`) with a ``neg`` or ``hsm`` output layer,
trained in place by the compiled engine (:mod:`bigvocab.word2vec.engine`); ``output=`` any other
registered layer (``nce``, ``sampled``, ``full``, ...) trains the same model on the torch path.

gensim's vocabulary features work as in gensim: online growth (``build_vocab(update=True)``),
``trim_rule``, ``max_vocab_size``, ``max_final_vocab``, ``sorted_vocab``, ``null_word``; so do
``compute_loss`` with ``get_latest_training_loss()``, ``callbacks`` (``CallbackAny2Vec``'s
hooks), ``predict_output_word``, ``score``, ``wv.vectors_lockf`` and ``load`` of a file gensim
saved (:mod:`bigvocab.word2vec.gensim_files`). Warnings go through ``logging``, as gensim's.

Differences from gensim, each deliberate:

* one output layer: ``hs=1`` uses the hierarchical softmax only (gensim would also train a
  negative-sampling layer when ``negative > 0``), with a warning;
* ``score`` gives the exact log-probability under any output layer (gensim: only ``hs=1``);
* ``unk="<unk>"`` keeps the words under ``min_count`` as one token instead of dropping them;
* ``hogbatch=True`` (skip-gram + negative sampling) shares one negative set per window
  (Ji et al. 2016);
* the torch path (``output=`` another layer) reads the stream without sentence ends, so its
  windows cross them (see :mod:`bigvocab.models.word2vec`).
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import types
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bigvocab.errors import CheckpointError, ConfigError, DataError, EmptyVocabularyError
from bigvocab.models import build_model
from bigvocab.models.base import LanguageModel, WordModel
from bigvocab.models.word2vec import WORD2VEC_DEFAULTS, word2vec_output_options
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX, NEGATIVE_SAMPLING, engine_kind_of, layer_for_engine_kind
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_int
from bigvocab.word2vec import corpus as corpus_io
from bigvocab.word2vec.engine import CHUNK_WORDS, Schedule, engine_arrays, engine_unsupported, train_epoch
from bigvocab.word2vec.keyed_vectors import KeyedVectors
from bigvocab.word2vec.progress import progress_bar

PathLike = str | os.PathLike
_SAVE_FORMAT = "bigvocab.Word2Vec/1"
logger = logging.getLogger("bigvocab.word2vec")

#: gensim 3's keywords that gensim 4 renamed, and the name to use.
GENSIM3_KEYWORDS = {"size": "vector_size", "iter": "epochs"}

#: What ``save`` leaves out of the options: rebuilt on load, or not picklable (callbacks).
_NOT_SAVED = ("module", "wv", "_tmp", "counts", "_index", "callbacks", "raw_vocab", "_plan", "_syn1_rows")


class _ClassOnly:
    """A class method that an instance refuses, as gensim's ``load``: ``model.load(path)`` would
    return the loaded model and leave ``model`` untouched, which reads as if it loaded into it."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, instance: object, owner: type) -> Callable[..., Any]:
        if instance is not None:
            raise AttributeError(f"{self.function.__name__} is a class method: call Word2Vec.load(path) instead")
        return types.MethodType(self.function, owner)


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
        **unknown: Any,
    ) -> None:
        for name in unknown:
            if name in GENSIM3_KEYWORDS:
                raise ConfigError(f"{name}= is gensim 3's keyword: use {GENSIM3_KEYWORDS[name]}=")
            raise TypeError(f"Word2Vec() got an unexpected keyword argument {name!r}")
        self.max_vocab_size = None if max_vocab_size is None else check_positive_int("max_vocab_size", max_vocab_size)
        self.null_word = bool(null_word)
        self.sorted_vocab = bool(sorted_vocab)
        self.compute_loss = bool(compute_loss)
        self.callbacks = tuple(callbacks)
        self.running_training_loss = 0.0
        self.effective_min_count = 0
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
        self.min_alpha_yet_reached = self.alpha
        self.raw_vocab: Counter = Counter()
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._syn1_rows: torch.Tensor | None = None
        if sentences is not None and corpus_file is not None:
            raise ConfigError("give sentences or corpus_file, not both")
        if sentences is not None or corpus_file is not None:
            self.build_vocab(sentences, corpus_file=corpus_file, trim_rule=trim_rule)
            self.train(
                sentences,
                corpus_file=corpus_file,
                total_examples=self.corpus_count,
                total_words=self.corpus_total_words,
                epochs=self.epochs,
                compute_loss=compute_loss,
                callbacks=callbacks,
            )

    def _choose_output(self, output: str | None) -> str:
        if output is not None:
            OUTPUTS.get(output)  # an unknown name names the closest
            return output
        if self.hs and self.negative:
            logger.warning(
                "Both hierarchical softmax and negative sampling are activated. bigvocab trains one output "
                "layer: hs=1 uses the hierarchical softmax only (negative=%d is not trained); pass negative=0",
                self.negative,
            )
        if not self.hs and not self.negative:
            raise ConfigError(
                "negative=0 with hs=0 trains no output layer: set negative > 0 (negative sampling) "
                "or hs=1 (hierarchical softmax)"
            )
        return layer_for_engine_kind(HIERARCHICAL_SOFTMAX if self.hs else NEGATIVE_SAMPLING)

    # ------------------------------------------------------------------ vocabulary
    def scan_vocab(
        self,
        corpus_iterable: Iterable[Sequence[str]] | None = None,
        corpus_file: PathLike | None = None,
        progress_per: int = 10000,
        workers: int | None = None,
        trim_rule: Callable[[str, int, int], int] | None = None,
    ) -> tuple[int, int]:
        """Count the corpus's words into ``raw_vocab`` (bounded by ``max_vocab_size``); returns
        (words, sentences), also kept as ``corpus_total_words`` and ``corpus_count``."""
        found = corpus_io.scan(self._sentences(corpus_iterable, corpus_file), self.max_vocab_size, trim_rule)
        self.raw_vocab = found.counts
        self.corpus_count, self.corpus_total_words = found.sentences, found.words
        return found.words, found.sentences

    def prepare_vocab(
        self,
        update: bool = False,
        keep_raw_vocab: bool = False,
        trim_rule: Callable[[str, int, int], int] | None = None,
        min_count: int | None = None,
        sample: float | None = None,
        dry_run: bool = False,
    ) -> dict[str, int]:
        """Choose the words of ``raw_vocab`` to keep (``min_count``, ``trim_rule``, raised to fit
        ``max_final_vocab``: ``effective_min_count``) and return gensim's summary of the choice
        (``drop_unique``, ``drop_total``, ``retain_total``, ``num_retained_words``)."""
        found = corpus_io.VocabScan(self.raw_vocab)
        self._plan = corpus_io.plan_vocabulary(
            found,
            self.min_count if min_count is None else min_count,
            max_final_vocab=self.max_final_vocab,
            trim_rule=trim_rule,
            unk=self.unk,
            sorted_vocab=self.sorted_vocab,
            null_word=self.null_word and not update,
        )
        if not dry_run:
            self.effective_min_count = self._plan.effective_min_count
        return self._plan.report()

    def build_vocab(
        self,
        corpus_iterable: Iterable[Sequence[str]] | None = None,
        corpus_file: PathLike | None = None,
        update: bool = False,
        progress_per: int = 10000,
        keep_raw_vocab: bool = False,
        trim_rule: Callable[[str, int, int], int] | None = None,
        **kwargs: Any,
    ) -> None:
        """Count the words, keep those with at least ``min_count`` occurrences (by descending
        count; ``trim_rule(word, count, min_count)`` may keep or drop any, returning gensim's
        ``RULE_*`` values from :mod:`bigvocab.word2vec.corpus`) and build the model with fresh
        weights (seeded by ``seed``). ``update=True`` grows a built model instead: the counts of
        known words add up, new words get new rows (vectors drawn as at the start, output rows at
        zero), the noise table or the Huffman tree is rebuilt from the merged counts, and the
        trained rows of every word are kept (see :meth:`_grow` for a tree's nodes)."""
        self.scan_vocab(corpus_iterable, corpus_file, trim_rule=trim_rule)
        self._apply_vocab(update, trim_rule)

    def build_vocab_from_freq(
        self,
        word_freq: Mapping[str, int],
        keep_raw_vocab: bool = False,
        corpus_count: int | None = None,
        trim_rule: Callable[[str, int, int], int] | None = None,
        update: bool = False,
    ) -> None:
        """:meth:`build_vocab` from a ``{word: count}`` table instead of a corpus."""
        self.raw_vocab = Counter(dict(word_freq))
        self.corpus_count = corpus_count or 0
        self.corpus_total_words = sum(self.raw_vocab.values())
        self._apply_vocab(update, trim_rule)

    def _apply_vocab(self, update: bool, trim_rule: Callable[[str, int, int], int] | None) -> None:
        if update and self.module is None:
            raise EmptyVocabularyError(
                "You cannot do an online vocabulary-update of a model which has no prior vocabulary: "
                "build the vocabulary first (build_vocab without update=True)"
            )
        self.prepare_vocab(update=update, trim_rule=trim_rule)
        plan = self._plan
        if not update:
            if not plan.words:  # as gensim: an empty vocabulary is refused when training, not here
                logger.warning("no word survives min_count=%d: the vocabulary is empty", self.effective_min_count)
                self.module = self.wv = None
                return
            corpus_io.check_vocabulary(plan.words)
            self._build(plan.words, plan.counts)
            return
        words, counts = list(self._vectors.index_to_key), list(self.counts)
        known = self._vectors.key_to_index
        for word, count in zip(plan.words, plan.counts):
            if word in known:
                counts[known[word]] += count
            else:
                words.append(word)
                counts.append(count)
        self._grow(words, counts)

    def _grow(self, words: list[str], counts: list[int]) -> None:
        """Rebuild the model for a larger vocabulary. A parameter with one row per word (the word
        vectors, negative sampling's output vectors) keeps its trained rows and gets new rows as a
        fresh model's; one whose shape did not change is kept whole; any other starts afresh. So
        a Huffman tree's node vectors restart from zero: the tree rebuilt from the merged counts
        has other nodes (kept by row number, as gensim keeps them, they landed on unrelated nodes
        and pulled new words' vectors away from their neighbours). The structures derived from
        the counts (noise table, tree, subsampling) are built anew."""
        old_parameters = dict(self._module.named_parameters())
        old_size, old_lockf = len(self._vectors), self._vectors.vectors_lockf
        self._build(words, counts)
        with torch.no_grad():
            for name, parameter in self._module.named_parameters():
                old = old_parameters.get(name)
                if old is None or old.shape[1:] != parameter.shape[1:]:
                    continue
                if old.shape == parameter.shape:
                    parameter.copy_(old)
                elif old.shape[0] == old_size and parameter.shape[0] == len(words):
                    parameter[:old_size] = old
        if old_lockf.shape[0] > 1:
            grown = np.ones(len(words), dtype=np.float32)
            grown[: old_lockf.shape[0]] = old_lockf
            old_lockf = grown
        self._vectors.vectors_lockf = old_lockf

    def _build(self, words: list[str], counts: list[int]) -> None:
        """A fresh model over ``words``, and its KeyedVectors with the counts (and, for a tree,
        each word's Huffman ``code`` and ``point``, as gensim stores them)."""
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
        self.wv.expandos["count"] = np.array(counts, dtype=np.int64)
        self._index = dict(self.wv.key_to_index)
        self._syn1_rows = self._pad_tree_rows()

    def _pad_tree_rows(self) -> torch.Tensor | None:
        """gensim's ``syn1`` has one row per word, V, where a binary tree over V leaves has V - 1
        nodes: the tree layer's (V - 1, D) rows become the first rows of a (V, D) tensor whose
        last row stays zero, so ``syn1`` is a view of what trains, with gensim's shape."""
        output = self.module.output if isinstance(self.module, LanguageModel) else None
        if output is None or output.engine_kind != HIERARCHICAL_SOFTMAX or output.engine_unsupported() is not None:
            return None
        tables = output.engine_tables()
        rows = tables.rows
        padded = torch.zeros(rows.shape[0] + 1, rows.shape[1], dtype=rows.dtype)
        padded[:-1] = rows.detach()
        rows.data = padded[:-1]
        assert tables.path_offsets is not None and tables.path_rows is not None and tables.path_codes is not None
        offsets, nodes, codes = (t.cpu().numpy() for t in (tables.path_offsets, tables.path_rows, tables.path_codes))
        points = np.empty(len(self.counts), dtype=object)
        code = np.empty(len(self.counts), dtype=object)
        for word in range(len(self.counts)):
            points[word] = nodes[offsets[word] : offsets[word + 1]].astype(np.uint32)
            code[word] = codes[offsets[word] : offsets[word + 1]].astype(np.uint8)
        self._vectors.expandos.update(code=code, point=points)
        return padded

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
        """gensim's Huffman-tree node vectors, (V, D) as gensim's (a view; the last row is unused:
        the tree has V - 1 nodes), or None."""
        return None if self._syn1_rows is None else self._syn1_rows.numpy()

    @property
    def cum_table(self) -> np.ndarray | None:
        """gensim's cumulative noise table, (V,) uint32 scaled to 2**31 - 1, read from the layer's
        noise distribution (bigvocab draws from an alias table); None without negative sampling."""
        output = self.module.output if isinstance(self.module, LanguageModel) else None
        if self.syn1neg is None or output is None:
            return None
        noise_tensor = output.engine_tables().noise
        assert noise_tensor is not None  # negative sampling always has one
        noise = noise_tensor.double().cpu().numpy()
        return np.round(np.cumsum(noise / noise.sum()) * (2**31 - 1)).astype(np.uint32)

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
        ``start_alpha`` (default ``alpha``) to ``end_alpha`` (``min_alpha``) over all of them,
        with the sentences read when ``total_examples`` is given and with the words otherwise, as
        gensim's. As gensim, ``total_examples`` or ``total_words`` and ``epochs`` must be given
        (the engine counts the sentences and words itself). ``compute_loss``: :meth:`get_latest_training_loss` then
        gives the summed loss of every example of this call (engine only); ``callbacks``: objects
        with gensim's ``CallbackAny2Vec`` hooks (``on_train_begin``, ``on_epoch_begin``,
        ``on_epoch_end``, ``on_train_end``, each called with the model; the torch path calls the
        train hooks only). Returns (words kept by the subsampling, words read)."""
        if self.module is None:
            reason = "call build_vocab"
            if self.raw_vocab:
                reason = (
                    f"no word occurs min_count={self.effective_min_count} times (the most frequent occurs "
                    f"{max(self.raw_vocab.values())} times); lower min_count"
                )
            raise EmptyVocabularyError(f"you must first build vocabulary before training the model: {reason}")
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
        if compute_loss and not self.uses_engine:
            raise ConfigError(
                f"compute_loss=True needs the compiled engine, which cannot train this model: {self._why_torch()}"
            )
        self.compute_loss, self.callbacks = bool(compute_loss), tuple(callbacks)
        if alpha > self.min_alpha_yet_reached:
            logger.warning(
                "Effective 'alpha' higher than previous training cycles (%g > %g)", alpha, self.min_alpha_yet_reached
            )
        stream, words = self._stream(corpus_iterable, corpus_file)
        if words == 0:  # gensim trains nothing and warns
            warnings.warn("the training corpus holds no word of the vocabulary; nothing was trained", stacklevel=2)
            return 0, 0
        self.running_training_loss = 0.0
        self._call_back("on_train_begin")
        if self.uses_engine:
            kept = self._train_engine(stream, words, epochs, alpha, min_alpha, total_examples is not None)
        else:
            kept = self._train_torch(stream, epochs, alpha, min_alpha)
        self.min_alpha_yet_reached = min_alpha
        self._vectors.fill_norms()
        self._call_back("on_train_end")
        return kept, words * epochs

    def _why_torch(self) -> str:
        if not self.engine:
            return "engine=False"
        return engine_unsupported(self._module) or ""

    def _call_back(self, hook: str) -> None:
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is not None:
                method(self)

    def get_latest_training_loss(self) -> float:
        """The summed loss of the examples of the last ``train(compute_loss=True)`` so far (a
        float64 tally; negative log-likelihood of each binary decision, as gensim sums it)."""
        return self.running_training_loss

    def _train_engine(
        self, stream: np.ndarray, words: int, epochs: int, alpha: float, min_alpha: float, by_sentences: bool
    ) -> int:
        """The engine's epochs; the learning rate decays by sentences when ``by_sentences`` (gensim's
        rule when ``total_examples`` is given), counted in the stream rather than taken from the
        caller, and by words otherwise."""
        arrays = engine_arrays(self.module, self._vectors.vectors_lockf)
        sentences = int((stream < 0).sum())
        schedule = Schedule(alpha, min_alpha, (sentences if by_sentences else words) * epochs, by_sentences)
        kept = 0
        with progress_bar(words * epochs, self.progress) as bar:
            for epoch in range(epochs):
                bar.set_description(f"epoch {epoch + 1}/{epochs}")
                self._call_back("on_epoch_begin")
                done = train_epoch(
                    arrays,
                    stream,
                    schedule=schedule,
                    words_before=epoch * words,
                    sentences_before=epoch * sentences,
                    epoch=self.epochs_trained + epoch,
                    workers=self.workers,
                    seed=self.seed,
                    shrink=self.shrink_windows,
                    shared=self.hogbatch,
                    chunk_words=self.batch_words,
                    bar=bar,
                    compute_loss=self.compute_loss,
                )
                kept += done.kept
                self.running_training_loss += done.loss
                self.epochs_trained += 1
                self._vectors.fill_norms()
                self._call_back("on_epoch_end")
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
        self.epochs_trained += epochs
        return int(ids.numel()) * epochs

    # ------------------------------------------------------------------ queries of the output layer
    def _context_input(self, context: Sequence[int]) -> torch.Tensor:
        """(D,) the mean (or sum, ``cbow_mean=0``) of the context rows' vectors: CBOW's input to
        the output layer, and gensim's for ``predict_output_word`` whatever ``sg``."""
        rows = self._module.embedding.weight.detach()[list(context)]
        return rows.mean(0) if self.cbow_mean else rows.sum(0)

    def predict_output_word(self, context_words_list: Sequence[str | int], topn: int = 10):
        """The ``topn`` words most probable at the centre of the context words (keys or rows), as
        ``[(word, probability), ...]``: the exact softmax over the output vectors of negative
        sampling (gensim's rule); None when no context word is known."""
        if self.module is None or self.syn1neg is None:
            raise RuntimeError(
                "predict_output_word needs the output vectors of negative sampling (syn1neg): train with "
                "negative > 0 and hs=0"
            )
        context = [i for i in (self._vectors.get_index(w, -1) for w in context_words_list) if i >= 0]
        if not context:
            logger.warning("All the input context words are out-of-vocabulary for the current model.")
            return None
        scores = torch.as_tensor(self.syn1neg) @ self._context_input(context)
        probabilities = torch.softmax(scores.double(), 0)
        values, ids = probabilities.topk(min(topn, probabilities.numel()))
        return [(self._vectors.index_to_key[i], float(p)) for p, i in zip(values.tolist(), ids.tolist())]

    @torch.no_grad()
    def score(self, sentences: Iterable[Sequence[str]], total_sentences: int = 1_000_000, *args: Any, **kwargs: Any):
        """(n,) float32 log-likelihood of each of the first ``total_sentences`` sentences under the
        model (Taddy 2015, as gensim's ``score``): skip-gram sums log p(w_i | w_j) over the pairs
        of each full window, CBOW log p(w_i | context of i). Exact under any output layer (the
        layer's ``log_prob``); words outside the vocabulary are skipped."""
        module = self._module
        assert isinstance(module, LanguageModel)  # skip-gram and CBOW are
        scores: list[float] = []
        for sentence in corpus_io.iter_sentences(sentences):
            if len(scores) >= total_sentences:
                break
            ids = [self._vectors.key_to_index[w] for w in sentence if w in self._vectors.key_to_index]
            hidden, targets = self._score_pairs(ids)
            total = module.output.log_prob(hidden, targets).sum() if targets.numel() else torch.zeros(())
            scores.append(float(total))
        return np.array(scores, dtype=np.float32)

    def _score_pairs(self, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden (N, D), target (N,)) of one sentence's predictions for :meth:`score`."""
        weight = self._module.embedding.weight.detach()
        hidden: list[torch.Tensor] = []
        targets: list[int] = []
        for i, word in enumerate(ids):
            context = [ids[j] for j in range(max(0, i - self.window), min(len(ids), i + self.window + 1)) if j != i]
            if not context:
                continue
            if self.sg:
                hidden.extend(weight[context])
                targets.extend([word] * len(context))
            else:
                hidden.append(self._context_input(context))
                targets.append(word)
        if not targets:
            return weight[:0], torch.zeros(0, dtype=torch.long)
        return torch.stack(hidden), torch.tensor(targets)

    def reset_from(self, other_model: Word2Vec) -> None:
        """Take ``other_model``'s vocabulary and corpus sizes, with fresh weights of this model's
        options."""
        self.corpus_count, self.corpus_total_words = other_model.corpus_count, other_model.corpus_total_words
        self.raw_vocab = Counter(other_model.raw_vocab)
        self._build(list(other_model._vectors.index_to_key), list(other_model.counts))

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
        state = {key: value for key, value in vars(self).items() if key not in _NOT_SAVED}
        state["vectors_lockf"] = self._vectors.vectors_lockf
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

    def _load(cls: type[Word2Vec], fname: PathLike, *args: Any, **kwargs: Any) -> Word2Vec:  # type: ignore[misc]
        """A model written by :meth:`save`, or by gensim's ``Word2Vec.save`` (read through gensim,
        :mod:`bigvocab.word2vec.gensim_files`). A class method: ``Word2Vec.load(path)``."""
        if not os.path.isfile(fname):
            raise CheckpointError(f"model file {str(fname)!r} does not exist")
        if not zipfile.is_zipfile(fname):  # torch.save writes a zip; gensim a pickle
            from bigvocab.word2vec.gensim_files import from_gensim_model, gensim_models

            models = gensim_models()
            try:
                source = models.Word2Vec.load(os.fspath(fname), *args, **kwargs)
            except (pickle.UnpicklingError, EOFError, UnicodeDecodeError) as error:
                raise CheckpointError(
                    f"{str(fname)!r} was written neither by bigvocab.Word2Vec.save nor by gensim ({error})"
                ) from None
            return from_gensim_model(source, cls)
        saved = torch.load(fname, map_location="cpu", weights_only=False)
        if not isinstance(saved, dict) or saved.get("format") != _SAVE_FORMAT:
            raise CheckpointError(f"{str(fname)!r} was not written by bigvocab.Word2Vec.save")
        model = cls(progress=False)  # the defaults of options a file of an earlier version lacks
        options = dict(saved["options"])
        lockf = options.pop("vectors_lockf", np.ones(1, dtype=np.float32))
        vars(model).update(options)
        model._build(saved["words"], saved["counts"])
        model._module.load_state_dict(saved["module"])
        model._vectors.vectors_lockf = lockf
        return model

    load = _ClassOnly(_load)

    def __repr__(self) -> str:
        size = len(self.wv) if self.wv is not None else 0
        return f"Word2Vec<vocab={size}, vector_size={self.vector_size}, alpha={self.alpha}>"
