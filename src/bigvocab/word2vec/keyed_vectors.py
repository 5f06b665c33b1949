"""``KeyedVectors``: gensim's word-vector interface over a bigvocab embedding.

``vectors`` is a numpy view of the (V, D) embedding the model trains (no copy), rows in
``index_to_key`` order. Per-key attributes (gensim's ``get_vecattr`` / ``set_vecattr``: the
``count`` of each word, and for a hierarchical softmax its Huffman ``code`` and ``point``) are
arrays in ``expandos``, one entry per row; ``vectors_lockf`` scales each word's training steps
(one value for all, or one per word; 0 freezes a vector). Similarities, analogies and word-pair
correlations reuse :mod:`bigvocab.evaluate` (cosine over unit rows, 3CosAdd, Spearman), and the
methods keep gensim 4's names, signatures and return shapes, so code written for
``gensim.models.KeyedVectors`` runs unchanged.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from bigvocab.errors import DataError
from bigvocab.evaluate.analogy import evaluate_analogies, read_analogies
from bigvocab.evaluate.similarity import evaluate_similarity, read_word_pairs
from bigvocab.evaluate.vectors import WordVectors, load_word2vec_format

Key = str | int
Query = Key | np.ndarray | torch.Tensor


class KeyedVectors:
    """Word vectors by key.

    Args:
        index_to_key: the words, in row order.
        vectors: (V, D) float32 array or tensor; kept without a copy when it is a CPU float32 one.
    """

    def __init__(self, index_to_key: Sequence[str], vectors: np.ndarray | torch.Tensor) -> None:
        tensor = torch.as_tensor(vectors).detach()
        if tensor.dim() != 2 or tensor.shape[0] != len(index_to_key):
            raise DataError(
                f"{len(index_to_key)} keys need a ({len(index_to_key)}, D) matrix, got {tuple(tensor.shape)}"
            )
        self._tensor = tensor
        self.index_to_key = list(index_to_key)
        self.key_to_index = {key: i for i, key in enumerate(self.index_to_key)}
        self._words: WordVectors | None = None
        self.expandos: dict[str, np.ndarray] = {}
        self.vectors_lockf = np.ones(1, dtype=np.float32)

    # ------------------------------------------------------------------ per-key attributes
    def get_vecattr(self, key: Key, attr: str):
        """The attribute ``attr`` (e.g. ``"count"``) of ``key``; KeyError when it has none."""
        if attr not in self.expandos:
            raise KeyError(f"no attribute {attr!r} is stored (stored: {', '.join(self.expandos) or 'none'})")
        return self.expandos[attr][self.get_index(key)]

    def set_vecattr(self, key: Key, attr: str, value) -> None:
        """Set ``attr`` of ``key``; a new attribute gets one entry per key, of ``value``'s type."""
        if attr not in self.expandos:
            kind = np.asarray(value).dtype if np.ndim(value) == 0 else object
            self.expandos[attr] = np.zeros(len(self), dtype=kind)
        self.expandos[attr][self.get_index(key)] = value

    # ------------------------------------------------------------------ lookup
    @property
    def vectors(self) -> np.ndarray:
        """(V, D) numpy view of the vectors."""
        return self._tensor.numpy()

    @property
    def vector_size(self) -> int:
        return self._tensor.shape[1]

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: object) -> bool:
        return key in self.key_to_index

    def has_index_for(self, key: object) -> bool:
        return key in self

    def get_index(self, key: Key, default: int | None = None) -> int:
        """Row of ``key`` (an int is taken as a row); KeyError when absent and no ``default``."""
        if isinstance(key, (int, np.integer)) and 0 <= key < len(self):
            return int(key)
        if key in self.key_to_index:
            return self.key_to_index[key]
        if default is not None:
            return default
        raise KeyError(f"Key '{key}' not present")

    def get_vector(self, key: Key, norm: bool = False) -> np.ndarray:
        """The vector of ``key`` (unit length with ``norm=True``)."""
        index = self.get_index(key)
        return (self._unit()[index] if norm else self._tensor[index]).numpy()

    def __getitem__(self, key_or_keys: Key | Iterable[Key]) -> np.ndarray:
        """One key -> (D,); a list of keys -> (n, D)."""
        if isinstance(key_or_keys, (str, int, np.integer)):
            return self.get_vector(key_or_keys)
        return np.vstack([self.get_vector(key) for key in key_or_keys])

    def fill_norms(self, force: bool = False) -> None:
        """Forget the cached unit vectors (after the vectors changed, e.g. more training)."""
        self._words = None

    def _evaluator(self) -> WordVectors:
        if self._words is None:
            self._words = WordVectors(self.index_to_key, self._tensor)
        return self._words

    def _unit(self) -> torch.Tensor:
        return self._evaluator().unit

    # ------------------------------------------------------------------ similarity
    def _direction(self, positive, negative) -> tuple[torch.Tensor, set[int]]:
        """Weighted mean of the unit vectors (+1 positive, -1 negative) and the rows of keys."""
        terms: list[tuple[Query, float]] = [(q, 1.0) for q in _as_list(positive)] + [
            (q, -1.0) for q in _as_list(negative)
        ]
        if not terms:
            raise ValueError("cannot compute similarity with no input")
        unit, parts, used = self._unit(), [], set()
        for query, weight in terms:
            if isinstance(query, (str, int, np.integer)):
                index = self.get_index(query)
                used.add(index)
                parts.append(weight * unit[index])
            else:
                vector = torch.as_tensor(np.asarray(query), dtype=torch.float32).reshape(-1)
                parts.append(weight * vector / vector.norm().clamp_min(1e-30))
        mean = torch.stack(parts).mean(0)
        return mean / mean.norm().clamp_min(1e-30), used

    def most_similar(
        self,
        positive=None,
        negative=None,
        topn: int | None = 10,
        clip_start: int = 0,
        clip_end: int | None = None,
        restrict_vocab: int | None = None,
        indexer=None,
    ):
        """The ``topn`` keys nearest by cosine to the mean of the positive unit vectors minus the
        negative ones, as ``[(key, similarity), ...]``; the input keys are excluded. With
        ``topn=None`` the (V,) array of similarities. Keys or vectors are accepted."""
        if indexer is not None:
            raise ValueError("indexer= is not supported by bigvocab; search the whole vocabulary instead")
        if isinstance(positive, (str, int, np.integer, np.ndarray, torch.Tensor)) and negative is None:
            positive = [positive]
        direction, used = self._direction(positive, negative)
        stop = len(self) if restrict_vocab is None else min(restrict_vocab, len(self))
        stop = stop if clip_end is None else min(stop, clip_end)
        scores = self._unit()[clip_start:stop] @ direction
        if not topn:
            return scores.numpy()
        for index in used:
            if clip_start <= index < stop:
                scores[index - clip_start] = -torch.inf
        count = min(topn, scores.shape[0] - sum(clip_start <= i < stop for i in used))
        values, ids = scores.topk(max(count, 0))
        return [(self.index_to_key[i + clip_start], float(v)) for v, i in zip(values.tolist(), ids.tolist())]

    def similar_by_word(self, word: str, topn: int | None = 10, restrict_vocab: int | None = None):
        return self.most_similar(positive=[word], topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_key(self, key: str, topn: int | None = 10, restrict_vocab: int | None = None):
        return self.similar_by_word(key, topn, restrict_vocab)

    def similar_by_vector(self, vector, topn: int | None = 10, restrict_vocab: int | None = None):
        return self.most_similar(positive=[np.asarray(vector)], topn=topn, restrict_vocab=restrict_vocab)

    def most_similar_cosmul(self, positive=None, negative=None, topn: int | None = 10, restrict_vocab=None):
        """3CosMul (Levy & Goldberg 2014): the keys that maximise the product of their shifted
        cosines ``(1 + cos) / 2`` to the positive queries over that to the negative ones (plus
        1e-6), as ``[(key, score), ...]``; the input keys are excluded, ``topn=None`` gives the
        (V,) scores. A key stands for its unit vector; a vector is taken as given (as gensim
        does: pass a unit vector for cosines)."""
        if isinstance(positive, (str, int, np.integer, np.ndarray, torch.Tensor)) and negative is None:
            positive = [positive]
        stop = len(self) if restrict_vocab is None else min(restrict_vocab, len(self))
        unit, used = self._unit()[:stop], set()

        def shifted(query: Query) -> torch.Tensor:
            if isinstance(query, (str, int, np.integer)):
                index = self.get_index(query)
                used.add(index)
                vector = self._unit()[index]
            else:
                vector = torch.as_tensor(np.asarray(query), dtype=torch.float32).reshape(-1)
            return (1 + unit @ vector) / 2

        positives, negatives = [shifted(q) for q in _as_list(positive)], [shifted(q) for q in _as_list(negative)]
        if not positives and not negatives:
            raise ValueError("cannot compute similarity with no input")
        ones = torch.ones(stop)
        scores = torch.stack(positives or [ones]).prod(0) / (torch.stack(negatives or [ones]).prod(0) + 1e-6)
        if not topn:
            return scores.numpy()
        for index in used:
            if index < stop:
                scores[index] = -torch.inf
        values, ids = scores.topk(max(min(topn, stop - sum(i < stop for i in used)), 0))
        return [(self.index_to_key[i], float(v)) for v, i in zip(values.tolist(), ids.tolist())]

    def similarity(self, w1: Key, w2: Key) -> float:
        """Cosine similarity of two keys: :meth:`n_similarity` of one key each, to the bit."""
        return self.n_similarity([w1], [w2])

    def distance(self, w1: Key, w2: Key) -> float:
        return 1.0 - self.similarity(w1, w2)

    def n_similarity(self, ws1: Sequence[Key], ws2: Sequence[Key]) -> float:
        """Cosine similarity of the means of two sets of vectors (gensim: ZeroDivisionError when
        a set is empty)."""
        if not len(ws1) or not len(ws2):
            raise ZeroDivisionError("At least one of the passed list is empty.")
        first, second = self[list(ws1)].mean(0), self[list(ws2)].mean(0)
        return float(np.dot(first / np.linalg.norm(first), second / np.linalg.norm(second)))

    def doesnt_match(self, words: Sequence[str]) -> str:
        """The word furthest from the mean of the others' unit vectors (gensim's rule)."""
        present = [w for w in words if w in self]
        if not present:
            raise ValueError("cannot select a word from an empty list")
        unit = self._unit()[[self.key_to_index[w] for w in present]]
        mean = unit.mean(0)
        return present[int((unit @ (mean / mean.norm().clamp_min(1e-30))).argmin())]

    # ------------------------------------------------------------------ evaluation
    def evaluate_word_analogies(
        self,
        analogies: str | os.PathLike,
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
        similarity_function: str = "most_similar",
    ) -> tuple[float, list[dict]]:
        """``(accuracy, sections)`` as gensim: each section ``{"section", "correct", "incorrect"}``
        with the questions as upper-cased 4-tuples, and a last ``"Total accuracy"`` section.
        ``similarity_function="most_similar"`` answers by 3CosAdd, ``"most_similar_cosmul"`` by
        3CosMul, over the ``restrict_vocab`` most frequent words (:mod:`bigvocab.evaluate.analogy`;
        gensim 4.4 answers by 3CosAdd whichever is named); questions with an unknown word are
        skipped (``dummy4unknown``: counted as wrong)."""
        if not case_insensitive:
            raise ValueError("bigvocab evaluates analogies case-insensitively (case_insensitive=True)")
        methods = {"most_similar": "3cosadd", "most_similar_cosmul": "3cosmul"}
        if similarity_function not in methods:
            raise ValueError(f"similarity_function must be one of {', '.join(methods)}, got {similarity_function!r}")
        questions = read_analogies(analogies)
        result = evaluate_analogies(
            self._evaluator(), questions, restrict_vocab=restrict_vocab, method=methods[similarity_function]
        )
        sections, correct_all, incorrect_all = [], [], []
        for (name, items), section in zip(questions, result.sections):
            outcome = dict(zip(section.answered, section.answered_correct))
            right = [_upper(q) for q in items if outcome.get(q) is True]
            wrong = [_upper(q) for q in items if outcome.get(q) is False or (dummy4unknown and q not in outcome)]
            sections.append({"section": name, "correct": right, "incorrect": wrong})
            correct_all += right
            incorrect_all += wrong
        sections.append({"section": "Total accuracy", "correct": correct_all, "incorrect": incorrect_all})
        answered = len(correct_all) + len(incorrect_all)
        return (len(correct_all) / answered if answered else 0.0), sections

    def evaluate_word_pairs(
        self,
        pairs: str | os.PathLike,
        delimiter: str = "\t",
        encoding: str = "utf8",
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
    ) -> tuple[tuple[float, float], tuple[float, float], float]:
        """``((pearson, p-value), (spearman, p-value), oov_ratio)`` as gensim, the ratio in percent
        of the pairs with a word outside the ``restrict_vocab`` most frequent (p-values need
        scipy; nan without it). Spearman comes from :mod:`bigvocab.evaluate.similarity`."""
        if not case_insensitive:
            raise ValueError("bigvocab evaluates word pairs case-insensitively (case_insensitive=True)")
        words = self._evaluator()
        pair_list = read_word_pairs(pairs)
        result = evaluate_similarity(words, pair_list, restrict_vocab=restrict_vocab)
        table = words.lowercase_index(restrict_vocab)
        found = [(table[a], table[b], s) for a, b, s in pair_list if a in table and b in table]
        oov = 100.0 * (len(pair_list) - len(found)) / len(pair_list)
        if len(found) < 2:
            return (math.nan, math.nan), (math.nan, math.nan), oov
        left, right, human = (list(column) for column in zip(*found))
        unit = words.unit
        cosines = (unit[left] * unit[right]).sum(1).double().numpy()
        pearson = float(np.corrcoef(cosines, human)[0, 1])
        return (pearson, _p_value(pearson, len(found))), (result.spearman, _p_value(result.spearman, len(found))), oov

    # ------------------------------------------------------------------ files
    def save_word2vec_format(self, fname: str | os.PathLike, fvocab=None, binary: bool = False, **kwargs) -> None:
        """word2vec's text or binary format (:mod:`bigvocab.evaluate.vectors`); ``fvocab``: also
        the counts, one ``word count`` line each (word2vec.c's ``-save-vocab``)."""
        if fvocab is not None:
            if "count" not in self.expandos:
                raise DataError("fvocab= writes the word counts, and these vectors have none")
            write_vocab(fvocab, self.index_to_key, self.expandos["count"])
        self._evaluator().save_word2vec_format(fname, binary=binary)

    @classmethod
    def load_word2vec_format(
        cls, fname: str | os.PathLike, fvocab=None, binary: bool = False, **kwargs
    ) -> KeyedVectors:
        """Vectors from word2vec's text or binary format; ``fvocab``: their counts from a vocabulary
        file (a word it lacks gets count 0)."""
        loaded = load_word2vec_format(fname, binary=binary)
        vectors = cls(loaded.words, loaded.vectors)
        if fvocab is not None:
            counts = read_vocab(fvocab)
            vectors.expandos["count"] = np.array([counts.get(w, 0) for w in vectors.index_to_key], dtype=np.int64)
        return vectors

    def save(self, fname: str | os.PathLike, *args, **kwargs) -> None:
        """gensim's own file of these vectors, which ``gensim.models.KeyedVectors.load`` and
        :meth:`load` read (needs gensim: ``pip install 'bigvocab[interop]'``)."""
        from bigvocab.word2vec.gensim_files import to_gensim_vectors

        to_gensim_vectors(self).save(os.fspath(fname), *args, **kwargs)

    @classmethod
    def load(cls, fname: str | os.PathLike, *args, **kwargs) -> KeyedVectors:
        """Vectors from a file of gensim's ``KeyedVectors.save`` (needs gensim)."""
        from bigvocab.word2vec.gensim_files import from_gensim_vectors, gensim_models

        return from_gensim_vectors(gensim_models().KeyedVectors.load(os.fspath(fname), *args, **kwargs), cls)


def write_vocab(path: str | os.PathLike, words: Sequence[str], counts: Sequence[int] | np.ndarray) -> None:
    """word2vec.c's vocabulary file: ``word count`` lines, most frequent first."""
    from bigvocab.files import atomic_output

    order = sorted(range(len(words)), key=lambda i: -int(counts[i]))
    with atomic_output(path) as handle:
        handle.write("".join(f"{words[i]} {int(counts[i])}\n" for i in order).encode("utf-8"))


def read_vocab(path: str | os.PathLike) -> dict[str, int]:
    """word -> count from a vocabulary file of ``word count`` lines."""
    counts: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                parts = line.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    raise DataError(f"vocabulary file {str(path)!r} line {number}: want 'word count', got {line!r}")
                counts[parts[0]] = int(parts[1])
    except FileNotFoundError:
        raise DataError(f"vocabulary file {str(path)!r} does not exist") from None
    return counts


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (str, int, np.integer, torch.Tensor)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return [value]
    return list(value)


def _upper(question: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(word.upper() for word in question)


def _p_value(r: float, n: int) -> float:
    """Two-sided p-value of a correlation r over n pairs (t-test, as scipy); nan without scipy."""
    try:
        from scipy import stats
    except ImportError:
        return math.nan
    if n < 3 or abs(r) >= 1:
        return 0.0 if abs(r) >= 1 else math.nan
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return float(2 * stats.t.sf(abs(t), n - 2))
