"""gensim's data path: sentences or a ``corpus_file`` -> a vocabulary and a stream of word ids.

The stream is what the engine reads: int32 word ids with -1 after each sentence, so windows stop
at sentence ends. Words under ``min_count`` are dropped before the stream is written (word2vec.c
and gensim), so a window reaches over them; with ``unk`` set they become that token instead.

* ``sentences``: any re-iterable of lists of str; the stream is kept in memory (4 bytes a word).
* ``corpus_file``: a text file, one sentence a line, words separated by whitespace (gensim's
  ``LineSentence``); both passes read it line by line and the stream is written to a file that
  is memory-mapped, so a corpus larger than memory streams from disk; the engine gives back the
  pages it has passed (:class:`PassedPages`), so resident memory stays flat as it reads.
"""

from __future__ import annotations

import logging
import mmap
import os
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bigvocab.errors import ConfigError, DataError, EmptyVocabularyError

logger = logging.getLogger("bigvocab.word2vec")

PathLike = str | os.PathLike
#: Words encoded per write to a stream file.
_BLOCK = 1 << 20
#: Bytes of a memory-mapped stream read before its pages are given back at once (one madvise call).
RELEASE_BYTES = 16 << 20


@dataclass
class VocabScan:
    """What one pass over the corpus found: raw counts (in order of first appearance)."""

    counts: Counter = field(default_factory=Counter)
    sentences: int = 0
    words: int = 0


def _check_sentences(sentences: object) -> Iterable[Sequence[str]]:
    if isinstance(sentences, (str, bytes)):
        raise ConfigError(
            "sentences must be an iterable of lists of words, got a string (for a text file, pass corpus_file=PATH)"
        )
    if isinstance(sentences, types.GeneratorType):
        raise ConfigError(
            "sentences is a generator, which can be read only once; training reads it again "
            "(pass a list, or an iterable whose __iter__ restarts)"
        )
    if not hasattr(sentences, "__iter__"):
        raise ConfigError(f"sentences must be an iterable of lists of words, got {type(sentences).__name__}")
    return sentences


def iter_sentences(sentences: object) -> Iterator[Sequence[str]]:
    """The sentences. One given as a string is read as its characters, as gensim reads it, with
    gensim's warning through ``logging`` (once): it is almost always a sentence left unsplit."""
    warned = False
    for sentence in _check_sentences(sentences):
        if isinstance(sentence, (str, bytes)) and not warned:
            logger.warning(
                "Each 'sentences' item should be a list of words (usually unicode strings). First item here "
                "is instead plain %s: its characters are taken as words; split it first (e.g. %r.split())",
                type(sentence).__name__,
                str(sentence)[:30],
            )
            warned = True
        yield sentence


def iter_file(path: PathLike) -> Iterator[list[str]]:
    """gensim's ``LineSentence``: one sentence a line, whitespace-separated words."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"corpus_file {str(path)!r} does not exist")
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            yield line.split()


#: What a ``trim_rule(word, count, min_count)`` returns (gensim's ``utils.RULE_*`` values):
#: apply ``min_count``, drop the word, or keep it whatever its count.
RULE_DEFAULT, RULE_DISCARD, RULE_KEEP = 0, 1, 2

TrimRule = Callable[[str, int, int], int]


def keep_word(word: str, count: int, min_count: int, trim_rule: TrimRule | None = None) -> bool:
    """Whether ``word`` stays in the vocabulary: ``trim_rule``'s verdict, or ``count >= min_count``."""
    verdict = RULE_DEFAULT if trim_rule is None else trim_rule(word, count, min_count)
    return verdict == RULE_KEEP or (verdict != RULE_DISCARD and count >= min_count)


def scan(
    sentences: Iterable[Sequence[str]], max_vocab_size: int | None = None, trim_rule: TrimRule | None = None
) -> VocabScan:
    """Count the words. With ``max_vocab_size``, whenever more distinct words than that have been
    seen, those under a threshold are forgotten and the threshold rises by one (gensim's
    ``prune_vocab``): memory stays bounded, and the counts of the words kept are lower bounds."""
    found = VocabScan()
    threshold = 1
    for sentence in sentences:
        found.counts.update(sentence)
        found.sentences += 1
        found.words += len(sentence)
        if max_vocab_size is not None and len(found.counts) > max_vocab_size:
            for word, count in list(found.counts.items()):
                if not keep_word(word, count, threshold, trim_rule):
                    del found.counts[word]
            threshold += 1
    return found


@dataclass
class VocabPlan:
    """The words :func:`plan_vocabulary` keeps, their counts, and gensim's report of it."""

    words: list[str]
    counts: list[int]
    effective_min_count: int
    drop_unique: int
    drop_total: int

    def report(self) -> dict[str, int]:
        """gensim's ``prepare_vocab`` summary."""
        return {
            "drop_unique": self.drop_unique,
            "drop_total": self.drop_total,
            "retain_total": sum(self.counts),
            "num_retained_words": len(self.words),
        }


def plan_vocabulary(
    found: VocabScan,
    min_count: int,
    *,
    max_final_vocab: int | None = None,
    trim_rule: TrimRule | None = None,
    unk: str | None = None,
    sorted_vocab: bool = True,
    null_word: bool = False,
) -> VocabPlan:
    """The words kept by ``trim_rule`` and ``min_count``, raised as gensim does so that at most
    ``max_final_vocab`` words pass it (the words tied at the cut all go). ``sorted_vocab``: by
    descending count (ties in order of first appearance, as gensim), else in order of first
    appearance. With ``unk``, the dropped words' occurrences are counted as that token;
    ``null_word`` appends gensim's padding word ``"\\0"`` (count 1)."""
    if not found.counts:
        raise EmptyVocabularyError(
            "you must first build vocabulary before training the model: the corpus holds no words"
        )
    effective = min_count
    if max_final_vocab is not None and max_final_vocab < len(found.counts):
        ranked = sorted(found.counts.values(), reverse=True)
        effective = max(min_count, ranked[max_final_vocab] + 1)
    kept = [(w, c) for w, c in found.counts.items() if w != unk and keep_word(w, c, effective, trim_rule)]
    dropped = sum(found.counts.values()) - sum(c for _, c in kept)
    plan = VocabPlan([], [], effective, len(found.counts) - len(kept), dropped)
    if unk is not None and dropped:
        kept.append((unk, dropped))
    if sorted_vocab:
        kept.sort(key=lambda item: -item[1])
    if null_word:
        kept.append(("\0", 1))
    if kept:
        plan.words, plan.counts = (list(column) for column in zip(*kept))
    return plan


def check_vocabulary(words: Sequence[str]) -> None:
    """word2vec needs two words at least (one has no negative and no tree)."""
    if len(words) < 2:
        raise DataError(
            f"the vocabulary has {len(words)} word(s) ({', '.join(map(repr, words))}); word2vec needs at least 2"
        )


#: Id of a word that is dropped from the stream (under min_count, or unseen without ``unk``).
DROP = -2


def encoding_index(found: VocabScan, words: Sequence[str], unk: str | None = None) -> dict[str, int]:
    """word -> id for every word seen in the scan: the kept words' ids, the others ``unk``'s id or
    DROP. Knowing every word lets :func:`encode` map a sentence at C speed."""
    index = dict.fromkeys(found.counts, words.index(unk) if unk is not None else DROP)
    index.update((word, i) for i, word in enumerate(words))
    return index


def _encode_sentences(sentences: Iterable[Sequence[str]], index: dict[str, int], unseen: int) -> Iterator[list[int]]:
    """Each sentence's ids, -1 appended; words absent from ``index`` get ``unseen``."""
    lookup, get = index.__getitem__, index.get
    for sentence in sentences:
        try:
            ids = list(map(lookup, sentence))
        except KeyError:  # a word not in the scanned corpus
            ids = [get(word, unseen) for word in sentence]
        ids.append(-1)
        yield ids


def _finish(ids: list[int]) -> np.ndarray:
    array = np.array(ids, dtype=np.int32)
    return array[array != DROP]


def encode(sentences: Iterable[Sequence[str]], index: dict[str, int], unseen: int = DROP) -> tuple[np.ndarray, int]:
    """The in-memory stream (int32, -1 after each sentence) and its number of words."""
    ids: list[int] = []
    sentences_read = 0
    for sentence in _encode_sentences(sentences, index, unseen):
        ids.extend(sentence)
        sentences_read += 1
    stream = _finish(ids)
    return stream, stream.shape[0] - sentences_read


def encode_to_file(
    sentences: Iterable[Sequence[str]], index: dict[str, int], path: PathLike, unseen: int = DROP
) -> tuple[np.ndarray, int]:
    """The stream written to ``path`` block by block and memory-mapped read-only, and its
    number of words."""
    block: list[int] = []
    written = sentences_read = 0
    with open(path, "wb") as handle:
        for sentence in _encode_sentences(sentences, index, unseen):
            block.extend(sentence)
            sentences_read += 1
            if len(block) >= _BLOCK:
                part = _finish(block)
                part.tofile(handle)
                written += part.shape[0]
                block = []
        part = _finish(block)
        part.tofile(handle)
        written += part.shape[0]
    if written == 0:
        return np.zeros(0, dtype=np.int32), 0
    return np.memmap(path, dtype=np.int32, mode="r", shape=(written,)), written - sentences_read


class PassedPages:
    """Gives the OS back the pages of a memory-mapped stream (:func:`encode_to_file`) below a word
    position once ``RELEASE_BYTES`` have been passed (``madvise(MADV_DONTNEED)``): without it every
    page read stays resident until the epoch ends, so a corpus larger than memory would fill it.
    The file is untouched (a page read again comes back from it), so releasing is always safe.
    Any other array (in memory, or a platform without madvise) is left alone."""

    def __init__(self, stream: np.ndarray) -> None:
        base = getattr(stream, "base", None)
        whole_map = isinstance(base, mmap.mmap) and len(base) == stream.nbytes and stream.nbytes > 0
        self._map = base if whole_map and hasattr(mmap, "MADV_DONTNEED") else None
        self._itemsize = stream.itemsize
        self._released = 0  # bytes

    def passed(self, position: int, everything: bool = False) -> None:
        """Words before ``position`` will not be read again (in this pass); ``everything``:
        release them now, whatever their size."""
        if self._map is None:
            return
        end = position * self._itemsize // mmap.PAGESIZE * mmap.PAGESIZE
        if end - self._released >= RELEASE_BYTES or (everything and end > self._released):
            self._map.madvise(mmap.MADV_DONTNEED, self._released, end - self._released)
            self._released = end
