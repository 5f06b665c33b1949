"""Word similarity: Spearman correlation between human scores and cosine similarities.

Data sets such as WordSim-353 (Finkelstein et al. 2002) and SimLex-999 (Hill et al. 2015) list
word pairs with a human score, one pair a line: ``w1<TAB>w2<TAB>score`` (``#`` starts a comment).
Pairs with a word outside the vocabulary are skipped and counted. Matching is case-insensitive.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bigvocab.errors import DataError
from bigvocab.evaluate.lines import numbered_lines
from bigvocab.evaluate.vectors import WordVectors

Pair = tuple[str, str, float]


@dataclass
class SimilarityResult:
    spearman: float  # rank correlation over the pairs used (nan when fewer than 2)
    pairs: int  # pairs used
    skipped: int  # pairs with an out-of-vocabulary word

    def to_dict(self) -> dict:
        return {"spearman": self.spearman, "pairs": self.pairs, "skipped": self.skipped}


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks of ``values``; tied values share the mean of the ranks they span."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    first = np.flatnonzero(starts)
    run_length = np.diff(np.r_[first, values.size])
    run_rank = first + (run_length + 1) / 2.0  # mean of the 1-based ranks first+1 .. first+length
    ranks = np.empty(values.size)
    ranks[order] = run_rank[np.cumsum(starts) - 1]
    return ranks


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho: Pearson's correlation of the average ranks (nan if either is constant)."""
    if len(x) != len(y):
        raise DataError(f"spearman needs two sequences of one length, got {len(x)} and {len(y)}")
    if len(x) < 2:
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / denominator if denominator > 0 else math.nan


def read_word_pairs(path: str | os.PathLike) -> list[Pair]:
    """``[(w1, w2, score), ...]`` from a tab-separated file (whitespace accepted), lowercased.

    ``#`` lines and blank lines are skipped, and so is a first line whose score is not a number
    (a column header).
    """
    pairs: list[Pair] = []
    for number, line in numbered_lines(path, "word-pair file"):
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) < 3:
            raise DataError(f"{str(path)!r} line {number}: expected 'word1<TAB>word2<TAB>score', got {line!r}")
        try:
            score = float(fields[2])
        except ValueError:
            if not pairs:
                continue
            raise DataError(f"{str(path)!r} line {number}: score {fields[2]!r} is not a number") from None
        pairs.append((fields[0].strip().lower(), fields[1].strip().lower(), score))
    if not pairs:
        raise DataError(f"word-pair file {str(path)!r} holds no pairs")
    return pairs


def evaluate_similarity(
    vectors: WordVectors,
    pairs: str | os.PathLike | list[Pair],
    restrict_vocab: int | None = None,
) -> SimilarityResult:
    """Spearman correlation of cos(w1, w2) with the human scores, over the pairs in vocabulary."""
    pairs = read_word_pairs(pairs) if isinstance(pairs, (str, os.PathLike)) else pairs
    table = vectors.lowercase_index(restrict_vocab)
    found = [(table[a], table[b], score) for a, b, score in pairs if a in table and b in table]
    if not found:
        return SimilarityResult(math.nan, 0, len(pairs))
    left, right, human = zip(*found)
    unit = vectors.unit
    cosines = (unit[list(left)] * unit[list(right)]).sum(dim=1).double().numpy()
    return SimilarityResult(spearman(cosines, human), len(found), len(pairs) - len(found))
