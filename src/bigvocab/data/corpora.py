"""Corpora as id streams: ``load_corpus("brown-bengio:PATH")`` and friends.

Every corpus becomes three 1-D int64 streams (train, valid, test) over one :class:`Vocab` built
from the training split. Sentences (lines) end with the token ``</s>``, as in Mikolov's PTB
setup; text8 has no sentences and the synthetic language none either, so their streams have no
``</s>``. **Sizes are counted in words: ``</s>`` is not a word.** Token-based splits (Brown,
text8) cut after the k-th word, and a ``</s>`` that ends that word's sentence stays with it, so
the ``brown`` splits are counted in words. ``brown-bengio`` follows Bengio et al. (2003) instead: no
sentence marks, a mark at the end of each paragraph and text, and the split counts those marks.

Spec kinds:
    ``synthetic[:key=value,...]``  the synthetic language (the embedded default, see synthetic.py)
    ``text:PATH``   one whitespace-tokenised sentence a line, split 80/10/10 by lines
    ``dir:PATH``    train/valid/test files: ``train.txt``, ``ptb.train.txt`` or ``wiki.train.tokens``
    ``brown:PATH``  the tagged Brown corpus (form C), tags stripped, split 80/10/10 by words
    ``brown-bengio:PATH``  Brown as in Bengio et al. (2003): paragraph and text marks, no sentence
                    marks, 800,000 / 200,000 / rest tokens, words seen at most 3 times in train
                    merged into ``<unk>``
    ``text8:PATH``  one long line (Mahoney's text8), split 90/5/5 by words as Mikolov et al. (2014)
                    split its 100M characters 90M/5M/5M
    ``xmc:DIR``     not a stream: labelled rows of the Extreme Classification Repository, for the
                    ``xmc`` model (:mod:`bigvocab.data.xmc_corpus`)
Case is kept everywhere: Bengio et al. (2003) distinguished upper and lower case.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from bigvocab.data.synthetic import SyntheticLanguage
from bigvocab.data.vocab import Vocab
from bigvocab.data.xmc import LabelledRows
from bigvocab.errors import ConfigError, DataError, UnknownNameError
from bigvocab.registry import CORPORA, unknown_name_message

EOS = "</s>"
UNK = "<unk>"
#: Marks of Bengio et al. (2003)'s Brown stream: the end of a paragraph and of a text.
PARAGRAPH_MARK = "<p>"
TEXT_MARK = "</text>"
#: Bengio et al. (2003): first 800,000 words train, next 200,000 validation, the rest test.
BENGIO_SPLIT = (800_000, 200_000)
#: ... and words seen at most 3 times in the training words are merged into one symbol.
BENGIO_MIN_COUNT = 4
#: Brown form C file names: ``c`` + genre letter a-r + two digits (README, CONTENTS, cats.txt are not text).
BROWN_FILE = re.compile(r"c[a-r]\d\d")
#: Reading is shown with a progress bar only above this many bytes (Brown, 11 MB, reads in ~1 s).
PROGRESS_BYTES = 64 << 20
_READ_BLOCK = 8 << 20
_SPLIT_FILES = ("{}.txt", "ptb.{}.txt", "wiki.{}.tokens")
#: Bytes hashed at each end of a file for its fingerprint.
FINGERPRINT_BYTES = 1 << 20


def corpus_kind(
    name: str, form: str, *, check: Callable[[str, str], object] | None = None, builds_vocabulary: bool = True
) -> Callable:
    """Register a loader in :data:`~bigvocab.registry.CORPORA` under ``name``
    (``name -> loader(spec, arg, options)``); ``form`` shows how a spec of this kind is written,
    and the loader's docstring's first paragraph describes it. ``check(spec, arg)``, when given,
    raises what the loader would for a missing path or bad options, without reading the corpus. ``builds_vocabulary`` False: the kind has a fixed vocabulary and refuses
    ``min_count`` and ``max_size``."""

    def decorate(loader: Callable) -> Callable:
        loader.form = form  # type: ignore[attr-defined]
        loader.check = check  # type: ignore[attr-defined]
        loader.builds_vocabulary = builds_vocabulary  # type: ignore[attr-defined]
        return CORPORA.register(name)(loader)

    return decorate


def check_corpus_spec(spec: str) -> None:
    """The error :func:`load_corpus` would give for ``spec``'s kind, path or options, found without
    reading the corpus: what a long job checks before it starts."""
    check = _kind(spec).check  # type: ignore[attr-defined]
    if check is not None:
        check(spec, spec.partition(":")[2])


def _kind(spec: str) -> Callable:
    kind = spec.partition(":")[0]
    if kind not in CORPORA:
        raise UnknownNameError(unknown_name_message("corpus kind", kind, CORPORA.names()) + "; write KIND:PATH")
    return CORPORA.get(kind)


def builds_vocabulary(spec: str) -> bool:
    """Whether the corpus ``spec`` builds its vocabulary from its training split, and so takes
    ``min_count`` and ``max_size`` (an unknown kind: True, and :func:`load_corpus` names it)."""
    kind = spec.partition(":")[0]
    return kind not in CORPORA or CORPORA.get(kind).builds_vocabulary


_SYNTHETIC_DEFAULTS = {
    "vocab_size": 10000,
    "num_classes": 50,
    "tokens": 1_000_000,
    "seed": 0,
    "zipf": 1.0,
    "concentration": 0.1,
    "valid_tokens": None,  # default: tokens // 10
    "test_tokens": None,
}


@dataclass
class Corpus:
    """Three id streams over one vocabulary.

    The splits are 1-D id streams, or :class:`LabelledRows` for an ``xmc:`` corpus (see
    :meth:`stream`). ``floor_perplexity`` is the true model's perplexity when it is known (synthetic language).
    ``meta`` records the source, the word count of each split and the conventions used.
    """

    name: str
    vocab: Vocab
    train: torch.Tensor | LabelledRows
    valid: torch.Tensor | LabelledRows
    test: torch.Tensor | LabelledRows
    floor_perplexity: float | None = None
    meta: dict = field(default_factory=dict)
    #: Model options the data fix, taken by a model that has them unless its caller sets them
    #: (an ``xmc:`` corpus's ``num_features``).
    model_options: dict = field(default_factory=dict)

    def stream(self, split: str) -> torch.Tensor:
        """The split ``split`` as a stream of ids, or a :class:`DataError` when it holds labelled rows."""
        data = getattr(self, split)
        if not isinstance(data, torch.Tensor):
            raise DataError(f"the corpus {self.name!r} holds labelled rows, not a stream of words")
        return data

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}={len(getattr(self, s)):,}" for s in ("train", "valid", "test"))
        floor = "" if self.floor_perplexity is None else f", floor_perplexity={self.floor_perplexity:.2f}"
        return f"Corpus({self.name!r}, vocab={len(self.vocab):,}, {sizes}{floor})"


@dataclass
class _Options:
    min_count: int | None
    max_size: int | None
    progress: bool
    vocab: Vocab | None


class _Interner:
    """Provisional ids in order of first appearance, shared by the splits of one corpus.

    Reading maps words to these ids once; the frequency-sorted vocabulary is then a relabelling,
    so no split is ever held as a list of Python strings (text8 has 17M words).
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def add(self, tokens: list[str], out: list[int]) -> None:
        ids = self.ids
        out.extend([ids.setdefault(t, len(ids)) for t in tokens])

    def get(self, word: str) -> int:
        return self.ids.get(word, -1)


def load_corpus(
    spec: str,
    *,
    min_count: int | None = None,
    max_size: int | None = None,
    progress: bool = True,
    vocab: Vocab | None = None,
) -> Corpus:
    """Read the corpus named by ``spec`` (see the module docstring for the kinds).

    Args:
        min_count: words seen fewer times in train become ``<unk>`` (default 1; 4 for brown-bengio).
        max_size: bound on the vocabulary size, ``<unk>`` and ``</s>`` included.
        progress: show a progress bar while reading files larger than 64 MB.
        vocab: encode every split with this vocabulary instead of building one from train (to
            evaluate a trained model on its own or on another corpus).
    """
    return _kind(spec)(spec, spec.partition(":")[2], _Options(min_count, max_size, progress, vocab))


def portable_spec(spec: str) -> str:
    """``spec`` with its path made absolute, so that it means the same from any directory (the
    synthetic language has no path and is returned as it is)."""
    kind, _sep, arg = spec.partition(":")
    if kind == "synthetic" or not arg:
        return spec
    return f"{kind}:{Path(arg).expanduser().resolve()}"


def corpus_fingerprint(spec: str) -> dict | None:
    """What identifies the files ``spec`` reads: for each file (the file itself, or the files
    directly inside the directory) its name, size and a SHA-256 of its first and last megabyte.
    None for the synthetic language, which its spec defines, and for a path that does not exist.
    The path itself is left out, so the same corpus moved or named another way matches."""
    kind, _, arg = spec.partition(":")
    path = Path(arg).expanduser()
    if kind == "synthetic" or not arg or not path.exists():
        return None
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    return {"directory": path.is_dir(), "files": [_file_fingerprint(p) for p in files]}


def _file_fingerprint(path: Path) -> dict:
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(FINGERPRINT_BYTES))
        if size > FINGERPRINT_BYTES:
            handle.seek(max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES))
            digest.update(handle.read())
    return {"name": path.name, "size": size, "sha256_ends": digest.hexdigest()}


def fingerprint_difference(stored: dict | None, current: dict | None) -> str | None:
    """What differs between two fingerprints, in words, or None when they match (or the run
    stored none, as runs from before fingerprints did)."""
    if stored is None:
        return None
    if current is None:
        return "it no longer exists"
    if not stored.get("directory") and not current["directory"]:  # one file, which may have been renamed
        old, new = stored["files"][0], current["files"][0]
        before, after = {new["name"]: old}, {new["name"]: new}
    else:
        before = {f["name"]: f for f in stored["files"]}
        after = {f["name"]: f for f in current["files"]}
    for name in sorted(set(before) | set(after)):
        if name not in after:
            return f"{name} is gone"
        if name not in before:
            return f"{name} is new"
        if before[name]["size"] != after[name]["size"]:
            return f"{name} has {after[name]['size']:,} bytes, not {before[name]['size']:,}"
        if before[name]["sha256_ends"] != after[name]["sha256_ends"]:
            return f"the contents of {name} changed"
    return None


def _check_synthetic(spec: str, arg: str) -> None:
    _parse_synthetic(arg)


def _check_file(spec: str, arg: str) -> None:
    _existing(arg, spec, directory=False)


@corpus_kind(
    "synthetic",
    "synthetic[:vocab_size=V,num_classes=K,tokens=N,seed=S]",
    check=_check_synthetic,
    builds_vocabulary=False,
)
def _load_synthetic(spec: str, arg: str, options: _Options) -> Corpus:
    """The embedded synthetic language (the default); its perplexity floor is known."""
    if options.min_count is not None or options.max_size is not None:
        raise ConfigError("min_count/max_size do not apply to the synthetic language: it keeps all its words")
    params = _parse_synthetic(arg)
    tokens = params.pop("tokens")
    valid_tokens = params.pop("valid_tokens")
    test_tokens = params.pop("test_tokens")
    language = SyntheticLanguage(**params)
    sizes = {"train": tokens, "valid": tokens // 10, "test": tokens // 10}
    sizes.update({k: v for k, v in (("valid", valid_tokens), ("test", test_tokens)) if v is not None})
    for split, n in sizes.items():
        if n < 1:
            raise ConfigError(f"synthetic {split} split would have {n} tokens; raise tokens (now {tokens})")
    # Streams 1, 2, 3 of the seed: independent of each other and of the language's default stream 0.
    streams = {s: language.sample(n, language.stream_generator(i + 1)) for i, (s, n) in enumerate(sizes.items())}
    vocab = options.vocab
    if vocab is None:
        counts = torch.bincount(streams["train"], minlength=language.vocab_size)
        vocab = Vocab(language.words, counts.tolist(), unk=None)
    elif vocab.words != language.words:
        last = language.vocab_size - 1
        raise DataError(f"the given vocabulary ({len(vocab)} words) is not this synthetic language's w0..w{last}")
    meta = {
        "source": "synthetic",
        "language": params,
        "entropy": language.entropy(),
        "eos": None,
        "words": sizes,
    }
    return Corpus(spec, vocab, streams["train"], streams["valid"], streams["test"], language.floor_perplexity(), meta)


def _parse_synthetic(arg: str) -> dict:
    """``vocab_size=10000,num_classes=50`` -> the defaults updated with these numbers."""
    params = dict(_SYNTHETIC_DEFAULTS)
    seen: set[str] = set()
    for item in filter(None, (s.strip() for s in arg.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or not key or not value:
            raise ConfigError(f"synthetic option {item!r} must be key=value (e.g. synthetic:vocab_size=10000)")
        if key not in params:
            raise ConfigError(unknown_name_message("synthetic option", key, list(params)))
        if key in seen:
            raise ConfigError(f"synthetic option {key!r} is given twice")
        seen.add(key)
        params[key] = _parse_number(key, value, integer=key not in ("zipf", "concentration"))
    return params


def _parse_number(key: str, text: str, *, integer: bool) -> float:
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        raise ConfigError(f"synthetic option {key}={text!r} is not a number") from None
    if integer:
        if not number.is_integer():
            raise ConfigError(f"synthetic option {key}={text!r} must be an integer")
        return int(number)
    return number


@corpus_kind("text", "text:PATH", check=_check_file)
def _load_text(spec: str, arg: str, options: _Options) -> Corpus:
    """One whitespace-tokenised sentence a line, split 80/10/10 by lines."""
    path = _existing(arg, spec, directory=False)
    interner = _Interner()
    stream = _read_files([path], interner, options, sentences=True)
    lines = int((stream == interner.get(EOS)).sum())
    if lines < 3:
        raise DataError(f"{path} has {lines} non-empty lines; text: splits by lines 80/10/10 and needs at least 3")
    valid = max(1, round(0.1 * lines))
    parts = _cut(stream, stream == interner.get(EOS), [lines - 2 * valid, valid], interner.get(EOS))
    return _assemble(spec, interner, parts, options, {"source": str(path), "split": "80/10/10 lines"})


def _split_files(spec: str, arg: str) -> tuple[Path, list[Path]]:
    folder = _existing(arg, spec, directory=True)
    return folder, [_split_file(folder, split) for split in ("train", "valid", "test")]


@corpus_kind("dir", "dir:PATH", check=_split_files)
def _load_dir(spec: str, arg: str, options: _Options) -> Corpus:
    """Train/valid/test files in a directory (train.txt, ptb.train.txt or wiki.train.tokens ...)."""
    folder, files = _split_files(spec, arg)
    interner = _Interner()
    parts = [_read_files([f], interner, options, sentences=True) for f in files]
    return _assemble(spec, interner, parts, options, {"source": str(folder), "files": [f.name for f in files]})


def _split_file(folder: Path, split: str) -> Path:
    found = [folder / name.format(split) for name in _SPLIT_FILES if (folder / name.format(split)).is_file()]
    names = " or ".join(name.format(split) for name in _SPLIT_FILES)
    if not found:
        raise DataError(f"{folder} has no {split} file (looked for {names})")
    if len(found) > 1:
        raise DataError(f"{folder} has several {split} files ({', '.join(f.name for f in found)}); keep one")
    return found[0]


@corpus_kind("brown", "brown:PATH", check=lambda spec, arg: _brown_files(spec, arg))
def _load_brown(spec: str, arg: str, options: _Options) -> Corpus:
    """The tagged Brown corpus, tags stripped, split 80/10/10 by words."""
    interner, stream, meta = _read_brown(spec, arg, options)
    words = stream != interner.get(EOS)
    valid = round(0.1 * int(words.sum()))
    parts = _cut(stream, words, [int(words.sum()) - 2 * valid, valid], interner.get(EOS))
    return _assemble(spec, interner, parts, options, {**meta, "split": "80/10/10 words"})


@corpus_kind("brown-bengio", "brown-bengio:PATH", check=lambda spec, arg: _brown_files(spec, arg))
def _load_brown_bengio(spec: str, arg: str, options: _Options) -> Corpus:
    """Brown as in Bengio et al. (2003): 800k/200k/rest words, rare words become <unk>.

    Their stream: words plus a mark at the end of every paragraph and of every
    text, no sentence marks. Their count of 1,181,041 tokens "including text and paragraph marks"
    is matched by this corpus's 1,161,192 words + 15,667 paragraphs + 500 texts = 1,177,359 (the
    rest is tokenisation), so the 800,000 / 200,000 split counts marks as tokens, as theirs did."""
    folder, files = _brown_files(spec, arg)
    interner = _Interner()
    ids: list[int] = []
    for path in files:
        for paragraph in re.split(r"\n\s*\n", _read_utf8(path)):
            tokens = paragraph.split()
            if tokens:
                interner.add([_strip_tag(t, path) for t in tokens] + [PARAGRAPH_MARK], ids)
        interner.add([TEXT_MARK], ids)
    stream = np.array(ids, dtype=np.int64)
    if len(stream) <= sum(BENGIO_SPLIT):
        raise DataError(f"{folder} has {len(stream):,} tokens; brown-bengio needs more than {sum(BENGIO_SPLIT):,}")
    if options.min_count is None and options.vocab is None:
        options.min_count = BENGIO_MIN_COUNT
    parts = _cut(stream, np.ones(len(stream), dtype=bool), list(BENGIO_SPLIT), -1)
    meta = {"source": str(folder), "files": len(files), "split": "800,000/200,000/rest tokens (Bengio et al. 2003)"}
    return _assemble(spec, interner, parts, options, meta, reserved=(PARAGRAPH_MARK, TEXT_MARK))


def _brown_files(spec: str, arg: str) -> tuple[Path, list[Path]]:
    folder = _existing(arg, spec, directory=True)
    files = sorted(p for p in folder.iterdir() if BROWN_FILE.fullmatch(p.name) and p.is_file())
    if not files:
        raise DataError(f"{folder} holds no Brown corpus files (ca01 .. cr09)")
    return folder, files


def _read_utf8(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not UTF-8 text ({err.reason} at byte {err.start})") from None


def _read_brown(spec: str, arg: str, options: _Options) -> tuple[_Interner, np.ndarray, dict]:
    folder, files = _brown_files(spec, arg)
    interner = _Interner()
    stream = _read_files(files, interner, options, sentences=True, tagged=True)
    return interner, stream, {"source": str(folder), "files": len(files)}


@corpus_kind("text8", "text8:PATH", check=_check_file)
def _load_text8(spec: str, arg: str, options: _Options) -> Corpus:
    """Mahoney's text8, split 90/5/5 by words."""
    path = _existing(arg, spec, directory=False)
    interner = _Interner()
    stream = _read_files([path], interner, options, sentences=False)
    if len(stream) < 3:
        raise DataError(f"{path} has {len(stream)} words; text8: splits 90/5/5 and needs at least 3")
    valid = max(1, round(0.05 * len(stream)))
    parts = _cut(stream, np.ones(len(stream), dtype=bool), [len(stream) - 2 * valid, valid], -1)
    return _assemble(spec, interner, parts, options, {"source": str(path), "split": "90/5/5 words"})


def _existing(arg: str, spec: str, *, directory: bool) -> Path:
    kind = spec.partition(":")[0]
    if not arg:
        raise DataError(f"corpus spec {spec!r} names no path; write {kind}:PATH")
    path = Path(arg).expanduser()
    if not path.exists():
        raise DataError(f"{kind} corpus path {str(path)!r} does not exist")
    if directory and not path.is_dir():
        raise DataError(f"{kind} corpus path {str(path)!r} is a file; {kind}: expects a directory")
    if not directory and path.is_dir():
        raise DataError(f"{kind} corpus path {str(path)!r} is a directory; use dir:{arg} for train/valid/test files")
    return path


def _read_files(
    paths: Sequence[Path], interner: _Interner, options: _Options, *, sentences: bool, tagged: bool = False
) -> np.ndarray:
    """The provisional ids of the files' words, in order; ``</s>`` after every non-empty line when
    ``sentences``. Reads binary blocks cut at a whitespace byte, so one 100 MB line costs no more
    memory than a block, and UTF-8 never splits (whitespace bytes are never inside a character)."""
    total = sum(p.stat().st_size for p in paths)
    quiet = not options.progress or total < PROGRESS_BYTES
    with tqdm(total=total, unit="B", unit_scale=True, desc="reading", disable=quiet) as bar:
        parts = [_read_file(p, interner, sentences, tagged, bar.update) for p in paths]
    return np.concatenate(parts)


def _read_file(
    path: Path, interner: _Interner, sentences: bool, tagged: bool, advance: Callable[[int], object]
) -> np.ndarray:
    parts: list[np.ndarray] = []
    carry, start = b"", 0  # start: file offset of carry's first byte
    with path.open("rb") as f:
        while True:
            block = f.read(_READ_BLOCK)
            advance(len(block))
            data = carry + block
            ends = (b"\n",) if sentences else (b"\n", b" ", b"\t")
            cut = len(data) if not block else max(data.rfind(end) for end in ends) + 1
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path} is not UTF-8 text ({err.reason} at byte {start + err.start})") from None
            carry, start = data[cut:], start + cut
            ids: list[int] = []
            for line in text.split("\n") if sentences else [text]:
                tokens = line.split()
                if tokens:
                    interner.add([_strip_tag(t, path) for t in tokens] if tagged else tokens, ids)
                    if sentences:
                        interner.add([EOS], ids)
            parts.append(np.array(ids, dtype=np.int64))
            if not block:
                break
    stream = np.concatenate(parts)
    if not len(stream):
        raise DataError(f"{path} is empty (no words)")
    return stream


def _strip_tag(token: str, path: Path) -> str:
    """``word/tag`` -> ``word``, cutting at the last '/' (``1/2/cd`` is the word ``1/2``)."""
    word, slash, tag = token.rpartition("/")
    if not slash or not word or not tag:
        raise DataError(f"{path}: token {token!r} is not word/tag (is this the tagged Brown corpus?)")
    return word


def _cut(stream: np.ndarray, units: np.ndarray, sizes: list[int], eos: int) -> list[np.ndarray]:
    """Split ``stream`` after its sizes[0]-th unit, then after sizes[1] more, ...; the rest is last.

    ``units`` marks what is counted (words, or ``</s>`` for lines). A ``</s>`` right after a cut
    ends the sentence of the word before it, so it stays on the left.
    """
    positions = np.flatnonzero(units)
    bounds = [0]
    for k in np.cumsum(sizes):
        end = int(positions[k - 1]) + 1
        bounds.append(end + (end < len(stream) and int(stream[end]) == eos))
    bounds.append(len(stream))
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def _assemble(
    spec: str,
    interner: _Interner,
    parts: list[np.ndarray],
    options: _Options,
    meta: dict,
    reserved: Sequence[str] = (EOS,),
) -> Corpus:
    """Build (or take) the vocabulary, relabel the provisional ids and check every split."""
    words = list(interner.ids)
    vocab = options.vocab
    if vocab is None:
        counts = np.bincount(parts[0], minlength=len(words)).tolist()
        vocab = Vocab.from_counts(
            dict(zip(words, counts)),
            min_count=options.min_count or 1,
            max_size=options.max_size,
            unk=UNK,
            reserved=reserved,
        )
    elif options.min_count is not None or options.max_size is not None:
        raise ConfigError("min_count/max_size cannot apply when a vocabulary is given")
    missing = -1  # provisional words the vocabulary lacks, when it has no unknown symbol
    unk = missing if vocab.unk_id is None else vocab.unk_id
    lookup = np.array([vocab.index(w) if w in vocab else unk for w in words], dtype=np.int64)
    eos = vocab.index(EOS) if EOS in vocab else -2
    streams = {}
    for split, part in zip(("train", "valid", "test"), parts):
        ids = lookup[part]
        words_in = ids[ids != eos]
        if not len(words_in):
            raise DataError(f"the {split} split of {spec!r} has no words")
        if (words_in == unk).all():
            raise DataError(
                f"every word of the {split} split of {spec!r} is unknown to the vocabulary "
                "(wrong vocabulary or file, or min_count/max_size too strict?)"
            )
        if unk == missing and (ids == missing).any():
            word = words[int(part[np.flatnonzero(ids == missing)[0]])]
            raise DataError(f"the {split} split of {spec!r} has the word {word!r}, which the vocabulary (no unk) lacks")
        streams[split] = torch.from_numpy(ids)
    meta = {
        **meta,
        "eos": EOS if EOS in vocab else None,
        "min_count": options.min_count or 1 if options.vocab is None else None,
        "words": {split: int((s != eos).sum()) for split, s in streams.items()},
    }
    return Corpus(spec, vocab, streams["train"], streams["valid"], streams["test"], None, meta)
