"""The vocabulary: words <-> ids, with ids sorted by descending training frequency.

Frequency order is what the rest of the library relies on: Huffman trees, unigram samplers,
frequency bands of the adaptive and differentiated softmax all read ``counts`` and assume id 0 is
the most frequent word (Mikolov et al. 2013; Grave et al. 2017). Rare words are merged into one
unknown symbol, as Bengio et al. (2003) did with the words seen at most 3 times in the Brown corpus.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path

import torch

from bigvocab.errors import DataError
from bigvocab.validation import check_positive_int

#: First field of the header line of a saved vocabulary file.
FILE_MAGIC = "#bigvocab-vocab"


class UnknownWordError(DataError, KeyError):
    """A word that is not in a vocabulary without an unknown symbol."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Vocab:
    """An indexed word list: the id of a word is its position in ``words``.

    Args:
        words: distinct, non-empty strings without tabs or newlines, in id order (normally by
            descending count, which :meth:`build` guarantees).
        counts: the training frequency of each word (non-negative integers), same length.
        unk: the symbol that stands for every word not in the list; it must be one of ``words``.
            ``None`` makes unknown words an error (e.g. the synthetic language, which has none).
    """

    def __init__(self, words: Sequence[str], counts: Sequence[int], unk: str | None = "<unk>") -> None:
        words = list(words)
        counts = [int(c) for c in counts]
        if len(words) != len(counts):
            raise DataError(f"vocabulary has {len(words)} words but {len(counts)} counts")
        if not words:
            raise DataError("vocabulary is empty")
        if not all(isinstance(word, str) for word in words):
            raise DataError("vocabulary words must be strings")
        joined = "\x00".join(words)  # one scan instead of three per word (V reaches 2M)
        if "\t" in joined or "\n" in joined or "\r" in joined or "" in words:
            word = next(w for w in words if not w or any(ch in w for ch in "\t\n\r"))
            raise DataError(f"vocabulary word {word!r} must be a non-empty string without tabs or newlines")
        if min(counts) < 0:
            raise DataError(f"vocabulary counts must be non-negative, got {min(counts)}")
        self.words: list[str] = words
        self.counts: list[int] = counts
        self._ids: dict[str, int] = {word: i for i, word in enumerate(words)}
        if len(self._ids) != len(words):
            seen: dict[str, int] = {}
            i, word = next((i, w) for i, w in enumerate(words) if seen.setdefault(w, i) != i)
            raise DataError(f"vocabulary word {word!r} appears twice (ids {seen[word]} and {i})")
        if unk is not None and unk not in self._ids:
            raise DataError(f"unknown-word symbol {unk!r} is not in the vocabulary; add it or pass unk=None")
        self.unk: str | None = unk
        self.unk_id: int | None = None if unk is None else self._ids[unk]

    @classmethod
    def build(
        cls,
        tokens: Iterable[str],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        unk: str | None = "<unk>",
        reserved: Sequence[str] = (),
    ) -> Vocab:
        """Count ``tokens`` and keep the frequent words; ties keep the order of first occurrence."""
        return cls.from_counts(Counter(tokens), min_count=min_count, max_size=max_size, unk=unk, reserved=reserved)

    @classmethod
    def from_counts(
        cls,
        counts: dict[str, int],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        unk: str | None = "<unk>",
        reserved: Iterable[str] = (),
    ) -> Vocab:
        """The vocabulary of a word -> count mapping (its iteration order breaks ties).

        Words seen fewer than ``min_count`` times, and the words beyond the ``max_size - 1`` most
        frequent, are merged into ``unk``, whose count becomes their total (plus its own, if the
        text already contains it, as PTB does); ``unk`` then takes its place in the frequency order.
        ``max_size`` bounds the whole vocabulary, ``unk`` included. Words in ``reserved`` (the
        end-of-sentence symbol) are never merged. Words with count 0 are dropped.
        """
        check_positive_int("min_count", min_count)
        if max_size is not None:
            check_positive_int("max_size", max_size)
        others = [(w, int(c)) for w, c in counts.items() if w != unk and c > 0]
        reserved = set(reserved) & {w for w, _ in others}
        # Reserved words first, then by frequency, so that max_size truncates the rarest words.
        ranked = sorted(range(len(others)), key=lambda i: (others[i][0] not in reserved, -others[i][1], i))
        room = len(others) if max_size is None else max_size - (unk is not None)
        if room < len(reserved):
            raise DataError(f"max_size={max_size} leaves no room for {sorted(reserved)} and the unknown symbol")
        keep = [i for i in ranked if others[i][0] in reserved or others[i][1] >= min_count][:room]
        merged = sum(c for _, c in others) - sum(others[i][1] for i in keep)
        if unk is None and merged:
            raise DataError("min_count/max_size would merge rare words, but unk=None gives them nowhere to go")
        kept = [others[i] for i in sorted(keep, key=lambda i: (-others[i][1], i))]
        if unk is not None:
            unk_count = int(counts.get(unk, 0)) + merged
            kept.insert(sum(1 for _, c in kept if c >= unk_count), (unk, unk_count))
        return cls([w for w, _ in kept], [c for _, c in kept], unk=unk)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._ids

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return (self.words, self.counts, self.unk) == (other.words, other.counts, other.unk)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, unk={self.unk!r}, tokens={sum(self.counts)})"

    def index(self, word: str) -> int:
        """The id of ``word``; the unknown symbol's id for words not in the vocabulary."""
        i = self._ids.get(word, self.unk_id)
        if i is None:
            raise UnknownWordError(f"word {word!r} is not in the vocabulary, which has no unknown symbol")
        return i

    def encode(self, tokens: Iterable[str]) -> torch.Tensor:
        """(N,) int64 ids of ``tokens``."""
        return torch.tensor([self.index(t) for t in tokens], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Iterable[int]) -> list[str]:
        """The words of a 1-D sequence of ids."""
        if isinstance(ids, torch.Tensor):
            ids = ids.reshape(-1).tolist()
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise DataError(f"id {bad[0]} is outside the vocabulary (ids 0..{len(self) - 1})")
        return [self.words[i] for i in ids]

    def to_dict(self) -> dict:
        """Plain lists, for storing inside a checkpoint."""
        return {"words": list(self.words), "counts": list(self.counts), "unk": self.unk}

    @classmethod
    def from_dict(cls, state: dict) -> Vocab:
        missing = {"words", "counts", "unk"} - set(state) if isinstance(state, dict) else {"words", "counts", "unk"}
        if missing:
            raise DataError(f"vocabulary state lacks {', '.join(sorted(missing))}")
        return cls(state["words"], state["counts"], unk=state["unk"])

    def save(self, path: str | PathLike) -> None:
        """Write a header line naming the unknown symbol, then ``word<TAB>count`` per id."""
        header = f"{FILE_MAGIC}\tunk={'' if self.unk is None else self.unk}\n"
        body = "".join(f"{w}\t{c}\n" for w, c in zip(self.words, self.counts))
        Path(path).write_text(header + body, encoding="utf-8")

    @classmethod
    def load(cls, path: str | PathLike) -> Vocab:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"vocabulary file {str(path)!r} does not exist")
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as err:
            raise DataError(f"vocabulary file {str(path)!r} is not UTF-8 text ({err.reason})") from None
        fields = lines[0].split("\t")
        if len(fields) != 2 or fields[0] != FILE_MAGIC or not fields[1].startswith("unk="):
            raise DataError(f"{str(path)!r} is not a bigvocab vocabulary file (bad header line {lines[0][:60]!r})")
        unk = fields[1][len("unk=") :] or None
        if lines[-1] == "":
            lines.pop()
        words, counts = [], []
        for number, line in enumerate(lines[1:], start=2):
            word, tab, count = line.rpartition("\t")
            if not tab or not count.isdigit():
                raise DataError(f"{str(path)!r} line {number}: expected 'word<TAB>count', got {line[:60]!r}")
            words.append(word)
            counts.append(int(count))
        try:
            return cls(words, counts, unk=unk)
        except DataError as err:
            raise DataError(f"{str(path)!r}: {err}") from None
