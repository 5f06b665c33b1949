"""Word analogies ``a : b :: c : d`` answered with 3CosAdd (Mikolov et al. 2013) or 3CosMul
(Levy & Goldberg 2014).

3CosAdd's answer is ``argmax_w cos(w, b - a + c)``; 3CosMul's is
``argmax_w cos'(w, b) cos'(w, c) / (cos'(w, a) + 1e-6)`` with ``cos' = (1 + cos) / 2`` in [0, 1],
so no one similarity dominates the others. Both search the ``restrict_vocab`` most frequent words
(30,000 in Mikolov et al. 2013 and in gensim's default evaluation), the three question words
excluded. Questions with a word outside that vocabulary are skipped and counted, not scored as
wrong. Matching is case-insensitive. The questions file is the ``questions-words.txt`` format:
``: section`` lines, then one question ``a b c d`` per line.

All questions are scored with matrix products, a block of questions at a time, so the 19,544
Google questions take seconds.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import torch

from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate.lines import numbered_lines
from bigvocab.evaluate.vectors import WordVectors
from bigvocab.validation import check_positive_int

Question = tuple[str, str, str, str]
#: Questions scored per matrix product: a (block, restrict_vocab) score matrix.
BLOCK = 512


@dataclass
class SectionResult:
    """Counts of one section; ``accuracy`` is over the questions answered (not skipped)."""

    name: str
    correct: int = 0
    total: int = 0
    skipped: int = 0
    #: the questions answered (not skipped), lowercased, and whether each was answered right.
    answered: list[Question] = field(default_factory=list)
    answered_correct: list[bool] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else math.nan


@dataclass
class AnalogyResult:
    sections: list[SectionResult] = field(default_factory=list)

    def _sum(self, attribute: str, sections: list[SectionResult] | None = None) -> int:
        return sum(getattr(s, attribute) for s in (self.sections if sections is None else sections))

    @property
    def correct(self) -> int:
        return self._sum("correct")

    @property
    def total(self) -> int:
        return self._sum("total")

    @property
    def skipped(self) -> int:
        return self._sum("skipped")

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else math.nan

    def _part_accuracy(self, syntactic: bool) -> float:
        part = [s for s in self.sections if s.name.startswith("gram") == syntactic]
        total = self._sum("total", part)
        return self._sum("correct", part) / total if total else math.nan

    @property
    def semantic_accuracy(self) -> float:
        """Accuracy on the sections not named ``gram*`` (the Google set's semantic half)."""
        return self._part_accuracy(False)

    @property
    def syntactic_accuracy(self) -> float:
        return self._part_accuracy(True)

    def to_dict(self) -> dict:
        return {
            "accuracy": self.accuracy,
            "correct": self.correct,
            "total": self.total,
            "skipped": self.skipped,
            "semantic_accuracy": self.semantic_accuracy,
            "syntactic_accuracy": self.syntactic_accuracy,
            "sections": [
                {"name": s.name, "accuracy": s.accuracy, "correct": s.correct, "total": s.total, "skipped": s.skipped}
                for s in self.sections
            ],
        }


def read_analogies(path: str | os.PathLike) -> list[tuple[str, list[Question]]]:
    """``[(section, [(a, b, c, d), ...]), ...]`` from a questions-words file, words lowercased."""
    sections: list[tuple[str, list[Question]]] = []
    for number, line in numbered_lines(path, "analogy file"):
        if not line:
            continue
        if line.startswith(":"):
            sections.append((line[1:].strip(), []))
            continue
        words = line.lower().split()
        if len(words) != 4:
            raise DataError(f"{str(path)!r} line {number}: an analogy has 4 words, got {len(words)}: {line!r}")
        if not sections:
            sections.append(("questions", []))
        sections[-1][1].append((words[0], words[1], words[2], words[3]))
    if not any(questions for _, questions in sections):
        raise DataError(f"analogy file {str(path)!r} holds no questions")
    return sections


def evaluate_analogies(
    vectors: WordVectors,
    questions: str | os.PathLike | list[tuple[str, list[Question]]],
    restrict_vocab: int | None = 30000,
    method: str = "3cosadd",
) -> AnalogyResult:
    """Accuracy per section and in total.

    Args:
        vectors: the word vectors, rows in descending frequency.
        questions: a questions-words file, or what :func:`read_analogies` returns.
        restrict_vocab: candidate answers and question words are limited to this many most
            frequent words (None: all).
        method: ``"3cosadd"`` or ``"3cosmul"``.
    """
    if method not in ANALOGY_SCORES:
        raise ConfigError(f"method must be one of {', '.join(ANALOGY_SCORES)}, got {method!r}")
    sections = read_analogies(questions) if isinstance(questions, (str, os.PathLike)) else questions
    limit = (
        len(vectors)
        if restrict_vocab is None
        else min(check_positive_int("restrict_vocab", restrict_vocab), len(vectors))
    )
    table = vectors.lowercase_index(limit)
    # row -> the row that stands for its lowercased spelling, so "Paris" and "paris" are one word
    canonical = torch.tensor([table[word.lower()] for word in vectors.words[:limit]], dtype=torch.long)
    unit = vectors.unit[:limit]
    result = AnalogyResult()
    for name, items in sections:
        section = SectionResult(name)
        section.answered = [q for q in items if all(w in table for w in q)]
        answerable = [tuple(table[w] for w in q) for q in section.answered]
        section.skipped = len(items) - len(answerable)
        section.total = len(answerable)
        if answerable:
            right = _correct(unit, canonical, torch.tensor(answerable, dtype=torch.long), ANALOGY_SCORES[method])
            section.answered_correct = right.tolist()
            section.correct = int(right.sum())
        result.sections.append(section)
    return result


def cos_add(unit: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """(n, R) 3CosAdd scores of every row for the questions with rows ``a``, ``b``, ``c`` (n,)."""
    return (unit[b] - unit[a] + unit[c]) @ unit.t()


def cos_mul(unit: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """(n, R) 3CosMul scores (Levy & Goldberg 2014), cosines shifted into [0, 1]."""

    def shifted(rows: torch.Tensor) -> torch.Tensor:
        return (1 + unit[rows] @ unit.t()) / 2

    return shifted(b) * shifted(c) / (shifted(a) + 1e-6)


#: How a question's candidates are scored, by the name ``evaluate_analogies`` takes.
ANALOGY_SCORES = {"3cosadd": cos_add, "3cosmul": cos_mul}


def _correct(unit: torch.Tensor, canonical: torch.Tensor, questions: torch.Tensor, score=cos_add) -> torch.Tensor:
    """(n,) bool: which questions (n, 4) of canonical rows have the fourth word as answer, by
    ``score`` (:func:`cos_add` or :func:`cos_mul`).

    ``unit`` (R, D) are unit rows; ``canonical`` (R,) maps each row to its spelling's row. The
    question words are excluded by writing -inf at their rows, and at the few other rows that
    spell them in another case.
    """
    aliases = torch.nonzero(canonical != torch.arange(canonical.numel())).squeeze(1)
    correct = []
    for start in range(0, questions.shape[0], BLOCK):
        block = questions[start : start + BLOCK]
        a, b, c, d = block.unbind(1)
        scores = score(unit, a, b, c)
        scores.scatter_(1, block[:, :3], -torch.inf)
        if aliases.numel():
            alias_of = canonical[aliases]
            hit = (alias_of == a[:, None]) | (alias_of == b[:, None]) | (alias_of == c[:, None])
            scores[:, aliases] = scores[:, aliases].masked_fill(hit, -torch.inf)
        correct.append(canonical[scores.argmax(dim=1)] == d)
    return torch.cat(correct)
