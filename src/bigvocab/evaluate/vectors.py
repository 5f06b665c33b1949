"""Word vectors: cosine nearest neighbours and the word2vec file formats.

The word2vec formats (Mikolov et al. 2013, ``word2vec.c``):

* text: a header line ``V D``, then one line per word, ``word v1 v2 ... vD``, separated by spaces;
* binary: the same header line, then per word the UTF-8 word, one space, D little-endian float32
  values, and a newline.

Rows are kept in the order given (for a bigvocab vocabulary, descending frequency), which is
what ``restrict_vocab`` relies on: the first N rows are the N most frequent words.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from bigvocab.data.vocab import Vocab
from bigvocab.errors import DataError
from bigvocab.registry import SIDE_LOADERS
from bigvocab.validation import check_positive_int

PathLike = str | os.PathLike


class WordVectors:
    """``words[i]`` has the vector ``vectors[i]``.

    Args:
        words: distinct words without whitespace, in row order.
        vectors: (V, D) float tensor or array.
    """

    def __init__(self, words: Sequence[str], vectors: Tensor | np.ndarray) -> None:
        vectors = torch.as_tensor(vectors).detach().to("cpu", torch.float32)
        words = list(words)
        if vectors.dim() != 2 or vectors.shape[0] != len(words):
            raise DataError(f"{len(words)} words need a ({len(words)}, D) matrix, got shape {tuple(vectors.shape)}")
        self.words = words
        self.vectors = vectors
        self._ids: dict[str, int] = {}
        for i, word in enumerate(words):
            if not isinstance(word, str) or not word or any(c.isspace() for c in word):
                raise DataError(f"word {word!r} at row {i} is empty or holds whitespace, which the format cannot store")
            if self._ids.setdefault(word, i) != i:
                raise DataError(f"word {word!r} appears twice (rows {self._ids[word]} and {i})")
        self._unit: Tensor | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._ids

    def __getitem__(self, word: str) -> Tensor:
        return self.vectors[self.index(word)]

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def index(self, word: str) -> int:
        try:
            return self._ids[word]
        except KeyError:
            raise DataError(f"word {word!r} is not in the vocabulary of {len(self)} words") from None

    @property
    def unit(self) -> Tensor:
        """(V, D) rows scaled to unit length (zero rows stay zero), computed once."""
        if self._unit is None:
            norms = self.vectors.norm(dim=1, keepdim=True)
            self._unit = self.vectors / norms.clamp_min(torch.finfo(torch.float32).tiny)
        return self._unit

    def lowercase_index(self, restrict_vocab: int | None = None) -> dict[str, int]:
        """lowercased word -> row among the first ``restrict_vocab`` rows. When several spellings
        fold to one (``Paris``, ``paris``), the first row -- the most frequent -- wins, as in the
        case-insensitive evaluation of gensim and word2vec's ``compute-accuracy``."""
        limit = (
            len(self)
            if restrict_vocab is None
            else min(check_positive_int("restrict_vocab", restrict_vocab), len(self))
        )
        table: dict[str, int] = {}
        for i in range(limit):
            table.setdefault(self.words[i].lower(), i)
        return table

    def most_similar(
        self, query: str | Tensor, topn: int = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]]:
        """The ``topn`` words closest to ``query`` (a word or a (D,) vector) by cosine similarity,
        best first, among the first ``restrict_vocab`` rows. A query word is not its own answer."""
        check_positive_int("topn", topn)
        limit = (
            len(self)
            if restrict_vocab is None
            else min(check_positive_int("restrict_vocab", restrict_vocab), len(self))
        )
        exclude = None
        if isinstance(query, str):
            exclude = self.index(query)
            direction = self.unit[exclude]
        else:
            direction = torch.as_tensor(query, dtype=torch.float32).reshape(-1)
            if direction.numel() != self.dim:
                raise DataError(f"query vector has {direction.numel()} dimensions, the vectors have {self.dim}")
            direction = direction / direction.norm().clamp_min(torch.finfo(torch.float32).tiny)
        scores = self.unit[:limit] @ direction
        if exclude is not None and exclude < limit:
            scores[exclude] = -torch.inf
        count = min(topn, limit - (exclude is not None and exclude < limit))
        values, ids = scores.topk(count)
        return [(self.words[i], float(v)) for v, i in zip(values.tolist(), ids.tolist())]

    def aligned_to(self, words: Sequence[str]) -> tuple[Tensor, int]:
        """``(matrix, missing)``: (len(words), D) with row i the vector of ``words[i]``; a word
        without a vector gets the mean vector (neutral for clustering), and ``missing`` counts them."""
        rows = [self._ids.get(word, -1) for word in words]
        missing = sum(row < 0 for row in rows)
        if missing == len(rows):
            raise DataError("none of the words has a vector: the vectors come from another vocabulary")
        index = torch.tensor(rows)
        matrix = self.vectors[index.clamp_min(0)]
        matrix[index < 0] = self.vectors.mean(dim=0)
        return matrix, missing

    # ------------------------------------------------------------------ word2vec format
    @classmethod
    def load_word2vec_format(cls, path: PathLike, binary: bool = False) -> WordVectors:
        """See :func:`load_word2vec_format`."""
        return load_word2vec_format(path, binary)

    def save_word2vec_format(self, path: PathLike, binary: bool = False) -> None:
        """Write the vectors in word2vec's text or binary format (see the module docstring),
        atomically: a failed write leaves ``path`` as it was and names it in a :class:`WriteError`."""
        from bigvocab.files import atomic_output

        rows = self.vectors.numpy()
        with atomic_output(path) as handle:
            handle.write(f"{len(self)} {self.dim}\n".encode())
            little_endian = rows.astype("<f4")
            for word, row, raw in zip(self.words, rows, little_endian):
                if binary:
                    handle.write(word.encode("utf-8") + b" " + raw.tobytes() + b"\n")
                else:
                    # 9 significant digits give back the exact float32
                    handle.write((word + " " + " ".join(f"{x:.9g}" for x in row.tolist()) + "\n").encode("utf-8"))


def load_word2vec_format(path: PathLike, binary: bool = False) -> WordVectors:
    """Read a word2vec text or binary file (as written by ``word2vec.c``, gensim or
    :meth:`WordVectors.save_word2vec_format`). Malformed files raise :class:`DataError`."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"vector file {str(path)!r} does not exist")
    with open(path, "rb") as handle:
        count, dim = _read_header(handle.readline(), path)
        reader = _read_binary_rows if binary else _read_text_rows
        words, vectors = reader(handle, count, dim, path)
    try:
        return WordVectors(words, torch.from_numpy(vectors))
    except DataError as error:
        raise DataError(f"{str(path)!r}: {error}") from None


@SIDE_LOADERS.register("vectors")
def vectors_for_vocabulary(path: PathLike, vocab: Vocab) -> Tensor:
    """Word vectors over the run's vocabulary, a (V, D) tensor, from a ``bigvocab train``
    checkpoint (``.pt``) or a word2vec file (``.bin`` binary, else text).

    A word without a vector gets the mean vector, with a warning that counts them."""
    vectors, missing = load_word_vectors(path).aligned_to(vocab.words)
    if missing:
        warnings.warn(
            f"{missing:,} of {len(vocab):,} words have no vector in {str(path)!r}; they get the mean vector",
            stacklevel=2,
        )
    return vectors


def load_word_vectors(path: PathLike) -> WordVectors:
    """Word vectors from a ``bigvocab train`` checkpoint (``.pt``: the model's input embedding)
    or a word2vec file (binary when the name ends in ``.bin``, text otherwise)."""
    path = Path(path)
    if path.suffix == ".pt":
        from bigvocab.checkpoint import load_model

        model, vocab, _ = load_model(path)
        return WordVectors(vocab.words, model.word_vectors())
    return load_word2vec_format(path, binary=path.suffix == ".bin")


def _read_header(line: bytes, path: Path) -> tuple[int, int]:
    fields = line.split()
    try:
        count, dim = (int(x) for x in fields)
    except ValueError:
        raise DataError(
            f"{str(path)!r}: the first line must be 'V D' (vocabulary size, dimension), got {line[:80]!r}"
        ) from None
    if count < 0 or dim < 1:
        raise DataError(f"{str(path)!r}: bad header {count} {dim}")
    return count, dim


#: Bytes of a number written as text; a binary file's float32 values are almost never only these.
_TEXT_NUMBER_BYTES = frozenset(b"0123456789.-+eE \t\r\n")


def _decode(raw: bytes, path: Path, row: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(
            f"{str(path)!r}: word {row + 1} is not valid UTF-8: {raw[:40]!r} (a binary word2vec "
            "file is read as binary only when its name ends in .bin)"
        ) from None


def _read_text_rows(handle, count: int, dim: int, path: Path) -> tuple[list[str], np.ndarray]:
    words, vectors = [], np.empty((count, dim), dtype=np.float32)
    for row in range(count):
        line = handle.readline()
        fields = line.rstrip(b"\r\n").rstrip(b" ").split(b" ")
        if not line:
            raise DataError(f"{str(path)!r}: the header announces {count} words but the file ends after {row}")
        if len(fields) != dim + 1:
            raise DataError(f"{str(path)!r}: line {row + 2} has {len(fields) - 1} values, expected {dim}")
        words.append(_decode(fields[0], path, row))
        try:
            vectors[row] = [float(x) for x in fields[1:]]
        except ValueError:
            raise DataError(f"{str(path)!r}: line {row + 2} holds a value that is not a number") from None
    return words, vectors


def _read_binary_rows(handle, count: int, dim: int, path: Path) -> tuple[list[str], np.ndarray]:
    data = handle.read()
    words, vectors = [], np.empty((count, dim), dtype=np.float32)
    width, position = 4 * dim, 0
    for row in range(count):
        # word2vec.c ends each row with a newline; some writers omit it
        while position < len(data) and data[position : position + 1] == b"\n":
            position += 1
        space = data.find(b" ", position)
        if space < 0:
            raise DataError(f"{str(path)!r}: the header announces {count} words but the file ends after {row}")
        words.append(_decode(data[position:space], path, row))
        raw = data[space + 1 : space + 1 + width]
        if row == 0 and set(raw) <= _TEXT_NUMBER_BYTES:
            raise DataError(
                f"{str(path)!r} holds text vectors, but a name ending in .bin means the binary word2vec "
                "format; rename it (e.g. .txt) to read it as text"
            )
        if len(raw) != width:
            raise DataError(f"{str(path)!r}: the vector of word {row + 1} is truncated")
        vectors[row] = np.frombuffer(raw, dtype="<f4")
        position = space + 1 + width
    return words, vectors
