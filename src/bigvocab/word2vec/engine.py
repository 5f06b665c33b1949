"""The compiled word2vec engine: which models it can train, and Hogwild! threads over a stream.

The engine trains a bigvocab ``skipgram`` / ``cbow`` model in place: ``syn0`` and ``syn1`` are
numpy views of ``model.embedding.weight`` and of the output layer's rows (its
``engine_tables().rows``, e.g. ``neg``'s ``scorer.weight``), so after training the model is an
ordinary bigvocab model (exact evaluation, checkpoints, export). It applies to the output layers
that declare an ``engine_kind`` (:mod:`bigvocab.outputs.engine`): negative sampling over free rows
without bias and any fixed noise distribution, and a hierarchical softmax over a binary tree
without bias; any other layer trains on the torch path.

Threads (Recht, Re, Wright & Niu 2011, "Hogwild!"): ``workers`` threads update the shared rows
without locks; numba's ``nogil`` lets them run at once. The stream is cut into chunks of about
``chunk_words`` words (at sentence ends) and each thread takes the next chunk from one shared
cursor when it has finished its last, as gensim's job queue hands out jobs: a thread that is
slowed (by the other's cache traffic, or another process) simply takes fewer chunks, where a
fixed range per thread left the faster one idle at the end (skip-gram + neg at 2 threads was
0.72x gensim's words/s that way; see the README for the figures since). The learning rate decays linearly with the words (or the
sentences, :class:`Schedule`) read by all threads together, from ``alpha`` at the start of the run
to ``min_alpha`` at its end (word2vec.c, gensim), and is constant within a chunk. One thread takes the chunks in order, so
its run is reproducible for a seed. With a tree on several threads, each thread moves its own
copies of the top nodes' rows, which every example updates, and merges them every few examples
(:func:`staging`, :func:`~bigvocab.kernels.word2vec.sync_staged`): shared, those rows changed cores on every
example and two threads trained no faster than one. ``should_stop`` (polled by the calling
thread) ends the epoch once the chunks under way are done, with every chunk before the cursor
trained, so the epoch resumes from the cursor (a signal stops a run within a chunk, not at the
epoch's end).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bigvocab.errors import ConfigError
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX
from bigvocab.samplers.alias import build_alias_table
from bigvocab.word2vec.corpus import PassedPages
from bigvocab.word2vec.progress import Progress

#: Words per engine call: the learning rate is constant within one (gensim's batch_words).
CHUNK_WORDS = 10000

#: At most this many tree nodes nearest the root are staged: each of several threads moves its own
#: copy of their rows (:func:`~bigvocab.kernels.word2vec.sync_staged`).
STAGED_ROWS = 63


@dataclass
class EngineArrays:
    """What the kernels read and write; ``syn0``/``syn1`` share memory with the model."""

    syn0: np.ndarray
    syn1: np.ndarray
    hs: bool
    negative: int
    accept: np.ndarray
    alias: np.ndarray
    path_offsets: np.ndarray
    path_rows: np.ndarray
    path_codes: np.ndarray
    keep_prob: np.ndarray
    sg: bool
    cbow_mean: bool
    window: int
    #: (V,) float32: each word's input-vector steps are scaled by it (gensim's ``vectors_lockf``).
    lockf: np.ndarray


def engine_unsupported(model) -> str | None:
    """Why the engine cannot train ``model`` (None when it can); the output layer says for itself
    (:mod:`bigvocab.outputs.engine`)."""
    name = model.model_name()
    if name not in ("skipgram", "cbow"):
        return f"the engine trains skipgram and cbow, not {name!r}"
    return model.output.engine_unsupported()


def _numpy_view(tensor: torch.Tensor) -> np.ndarray:
    """The tensor's memory as a numpy array (no copy): the engine writes into the model."""
    if tensor.device.type != "cpu" or tensor.dtype != torch.float32 or not tensor.is_contiguous():
        raise ConfigError("the word2vec engine trains float32 CPU tensors; move the model to the CPU")
    return tensor.detach().numpy()


def _long(tensor: torch.Tensor | None) -> np.ndarray:
    return tensor.cpu().numpy().astype(np.int64) if tensor is not None else np.zeros(1, dtype=np.int64)


def engine_arrays(model, lockf: np.ndarray | None = None) -> EngineArrays:
    """The model's tensors as numpy views, plus the noise table or the tree paths; ``lockf`` one
    factor for every word or one per word (default 1: every vector trains)."""
    reason = engine_unsupported(model)
    if reason is not None:
        raise ConfigError(reason)
    tables = model.output.engine_tables()
    vocab_size = model.vocab_size
    accept, alias = np.ones(1), _long(None)
    if tables.noise is not None:
        accept_t, alias_t = build_alias_table(tables.noise.cpu())
        accept, alias = accept_t.numpy(), _long(alias_t)
    keep = model.keep_prob.cpu().numpy().astype(np.float64) if model.keep_prob is not None else np.ones(vocab_size)
    return EngineArrays(
        syn0=_numpy_view(model.embedding.weight),
        syn1=_numpy_view(tables.rows),
        hs=tables.kind == HIERARCHICAL_SOFTMAX,
        negative=tables.num_samples,
        accept=accept,
        alias=alias,
        path_offsets=_long(tables.path_offsets),
        path_rows=_long(tables.path_rows),
        path_codes=_long(tables.path_codes),
        keep_prob=keep,
        sg=model.model_name() == "skipgram",
        cbow_mean=bool(getattr(model.config, "cbow_mean", True)),
        window=model.config.window,
        lockf=_per_word(lockf, vocab_size),
    )


def _per_word(lockf: np.ndarray | None, vocab_size: int) -> np.ndarray:
    values = np.ones(1, dtype=np.float32) if lockf is None else np.asarray(lockf, dtype=np.float32).reshape(-1)
    if values.shape[0] == 1:
        return np.full(vocab_size, values[0], dtype=np.float32)
    if values.shape[0] != vocab_size:
        raise ConfigError(f"vectors_lockf must hold 1 or {vocab_size} values (one per word), got {values.shape[0]}")
    return values


def chunk_end(stream: np.ndarray, at: int) -> int:
    """Where a chunk that reaches position ``at`` ends: just after the first sentence end (-1)
    at or after ``at - 1``, or at ``at`` itself when none comes within MAX_SENTENCE words (the
    kernel cuts a longer sentence into pieces anyway). Reads one block, so a memmap stays cheap."""
    from bigvocab.kernels.word2vec import MAX_SENTENCE  # numba loads on first use, not on import

    size = stream.shape[0]
    if at >= size:
        return size
    ends = np.flatnonzero(np.asarray(stream[at - 1 : at - 1 + MAX_SENTENCE]) < 0)
    return at + int(ends[0]) if ends.size else at


@dataclass
class Staging:
    """The tree nodes whose rows each thread copies (:func:`~bigvocab.kernels.word2vec.sync_staged`): those at the
    first ``depth`` levels of every path, ``rows`` (m,), and ``slot_of`` (R,), the slot of each
    row among them (-1 for the others)."""

    depth: int
    rows: np.ndarray
    slot_of: np.ndarray


def staging(arrays: EngineArrays, workers: int, shared: bool, max_rows: int = STAGED_ROWS) -> Staging:
    """The levels from the root that hold at most ``max_rows`` nodes, for a hierarchical softmax
    on several threads; none otherwise (one thread keeps word2vec's arithmetic exactly)."""
    none = Staging(0, np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    if not arrays.hs or workers < 2 or shared:
        return none
    starts, lengths = arrays.path_offsets[:-1], np.diff(arrays.path_offsets)
    levels: list[np.ndarray] = []  # the distinct rows at each depth, from the root
    for depth in range(max_rows.bit_length()):  # a level holds at least one node
        level = np.unique(arrays.path_rows[starts[lengths > depth] + depth])
        if level.size == 0 or sum(map(len, levels)) + level.size > max_rows:
            break
        levels.append(level)
    if not levels:
        return none
    staged = np.concatenate(levels)  # a node sits at one depth, so no row twice
    slot_of = np.full(arrays.syn1.shape[0], -1, dtype=np.int64)
    slot_of[staged] = np.arange(staged.shape[0])
    return Staging(len(levels), staged, slot_of)


class _Scratch:
    """One thread's work buffers, and its copies of the staged rows."""

    def __init__(self, arrays: EngineArrays, staged: int, compute_loss: bool) -> None:
        from bigvocab.kernels.word2vec import MAX_SENTENCE  # numba loads on first use, not on import

        size = arrays.syn0.shape[1]
        span = 2 * arrays.window
        self.rows = np.empty(arrays.negative + 1, dtype=np.int64)
        self.steps = np.empty(arrays.negative + 1, dtype=np.float32)
        self.sentence = np.empty(MAX_SENTENCE, dtype=np.int32)
        self.context = np.empty(span, dtype=np.int32)
        self.negatives = np.empty(arrays.negative, dtype=np.int64)
        self.neu1 = np.empty((1, size), dtype=np.float32)
        self.work = np.empty((1, size), dtype=np.float32)
        self.grads = np.empty((span, size), dtype=np.float32)
        self.dots = np.empty((span, arrays.negative + 1), dtype=np.float32)
        self.rng = np.zeros(1, dtype=np.uint64)
        self.local = np.empty((staged, size), dtype=np.float32)
        self.base = np.empty_like(self.local)
        self.since = np.zeros(1, dtype=np.int64)
        self.loss = np.zeros(1 if compute_loss else 0, dtype=np.float64)


@dataclass
class Schedule:
    """Linear decay of the learning rate over ``total`` words, or sentences with ``by_sentences``
    (all epochs of the run). gensim decays by sentences when ``train`` is given ``total_examples``
    and by words otherwise; the two differ where sentence lengths drift through the corpus (on
    gensim's ``head500.noblanks.cor``, long articles first, the mean rate by sentences is 1.7%
    higher)."""

    alpha: float
    min_alpha: float
    total: int
    by_sentences: bool = False

    def at(self, words: int, sentences: int) -> float:
        """The rate once ``words`` words and ``sentences`` sentences of the run are read."""
        progress = min(1.0, (sentences if self.by_sentences else words) / max(1, self.total))
        return self.alpha - (self.alpha - self.min_alpha) * progress


class _Cursor:
    """The chunks of one epoch, handed out in order, and the words read (and kept) by all threads,
    under one lock; a thread holds it only to take a chunk or to count one. The pages of a
    memory-mapped stream below every chunk still in training are given back as the cursor moves
    (:class:`~bigvocab.word2vec.corpus.PassedPages`)."""

    def __init__(
        self, stream: np.ndarray, position: int, chunk_words: int, words_before: int, sentences_before: int
    ) -> None:
        self.stream, self.position, self.chunk_words = stream, position, chunk_words
        self.stop = threading.Event()
        self.read = words_before
        self.sentences = sentences_before
        self.kept = 0
        self.loss = 0.0
        self.pages = PassedPages(stream)
        self._training: dict[int, int] = {}  # worker -> start of its chunk
        self._lock = threading.Lock()

    def take(self, worker: int) -> tuple[int, int] | None:
        """``worker``'s next chunk (start, end), or None at the end of the stream or once
        :attr:`stop` is set."""
        with self._lock:
            if self.position >= self.stream.shape[0] or self.stop.is_set():
                return None
            start = self.position
            self.position = chunk_end(self.stream, start + self.chunk_words)
            self._training[worker] = start
            return start, self.position

    def done(self, worker: int, read: int, kept: int, sentences: int, loss: float) -> None:
        """``worker`` has trained its chunk, reading ``read`` words and ending ``sentences``
        sentences, keeping ``kept`` words and tallying ``loss``."""
        with self._lock:
            self.read += read
            self.sentences += sentences
            self.kept += kept
            self.loss += loss
            del self._training[worker]
            self.pages.passed(min(self._training.values(), default=self.position))


@dataclass
class EpochResult:
    """What :func:`train_epoch` did: words read and kept, the cursor where it stopped (the
    stream's length when the epoch is complete), and the summed loss (0 unless asked for)."""

    read: int
    kept: int
    position: int
    loss: float = 0.0


def _seed(seed: int, epoch: int, chunk_start: int) -> int:
    """The random state a chunk starts from: set by where the chunk starts, not by the thread that
    takes it, so a corpus of one chunk trains the same on any number of threads."""
    return (seed * 1_000_003 + epoch * 7919 + chunk_start * 104729 + 1) % (1 << 63)


def train_epoch(
    arrays: EngineArrays,
    stream: np.ndarray,
    *,
    schedule: Schedule,
    words_before: int,
    epoch: int,
    sentences_before: int = 0,
    workers: int = 1,
    seed: int = 1,
    shrink: bool = True,
    shared: bool = False,
    chunk_words: int = CHUNK_WORDS,
    start: int = 0,
    should_stop: Callable[[], bool] | None = None,
    bar: Progress | None = None,
    compute_loss: bool = False,
) -> EpochResult:
    """One pass over ``stream[start:]`` (word ids, -1 after each sentence) with ``workers``
    threads sharing one chunk cursor. ``words_before`` words and ``sentences_before`` sentences of
    the run were read before (they set where the learning rate starts). Once ``should_stop()`` is true the threads finish their
    chunks and the pass ends; the result's ``position`` is then where to resume. ``compute_loss``:
    the result carries the summed loss of every example trained (a float64 tally). A
    KeyboardInterrupt in the calling thread stops the threads the same way before it propagates."""
    from bigvocab.kernels.word2vec import train_chunk

    cursor = _Cursor(stream, start, chunk_words, words_before, sentences_before)
    errors: list[BaseException] = []
    stage = staging(arrays, workers, shared)

    def work(worker: int) -> None:
        scratch = _Scratch(arrays, stage.rows.shape[0], compute_loss)
        try:
            while (chunk := cursor.take(worker)) is not None:
                scratch.rng[0] = _seed(seed, epoch, chunk[0])
                scratch.loss[:] = 0.0
                read, kept, sentences = train_chunk(
                    stream,
                    chunk[0],
                    chunk[1],
                    arrays.keep_prob,
                    arrays.syn0,
                    arrays.syn1,
                    arrays.sg,
                    arrays.hs,
                    shared,
                    arrays.cbow_mean,
                    arrays.window,
                    shrink,
                    arrays.accept,
                    arrays.alias,
                    arrays.path_offsets,
                    arrays.path_rows,
                    arrays.path_codes,
                    schedule.at(cursor.read, cursor.sentences),
                    scratch.rng,
                    scratch.sentence,
                    scratch.context,
                    scratch.negatives,
                    scratch.neu1,
                    scratch.work,
                    scratch.rows,
                    scratch.steps,
                    scratch.grads,
                    scratch.dots,
                    stage.depth,
                    stage.slot_of,
                    stage.rows,
                    scratch.local,
                    scratch.base,
                    scratch.since,
                    arrays.lockf,
                    scratch.loss,
                )
                cursor.done(worker, read, kept, sentences, float(scratch.loss.sum()))
        except BaseException as error:  # surfaced in the calling thread
            errors.append(error)
            cursor.stop.set()  # the other threads end at their chunk's end

    shown = words_before

    def poll() -> None:
        nonlocal shown
        if should_stop is not None and should_stop():
            cursor.stop.set()
        if bar is not None:
            bar.update(cursor.read - shown)
            shown = cursor.read

    poll()
    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(workers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.25)
                poll()
    except BaseException:
        cursor.stop.set()  # no thread goes on writing into the model behind the caller
        for thread in threads:
            thread.join()
        raise
    if errors:
        raise errors[0]
    poll()
    cursor.pages.passed(cursor.position, everything=True)
    return EpochResult(cursor.read - words_before, cursor.kept, cursor.position, cursor.loss)
