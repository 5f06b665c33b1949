"""Vocab: frequency order, rare-word merging, lookups and the file / dict round trips."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from bigvocab.data.vocab import UnknownWordError, Vocab
from bigvocab.errors import ConfigError, DataError


def reference_vocab(tokens: list[str], min_count: int) -> tuple[list[str], list[int]]:
    """Brute force: kept words by (-count, first occurrence), then <unk> after its equals."""
    counts = Counter(tokens)
    first = {w: tokens.index(w) for w in counts}
    kept = sorted((w for w in counts if counts[w] >= min_count), key=lambda w: (-counts[w], first[w]))
    unk = sum(c for w, c in counts.items() if c < min_count)
    entries = [(w, counts[w]) for w in kept]
    position = len([c for _, c in entries if c >= unk])
    entries.insert(position, ("<unk>", unk))
    return [w for w, _ in entries], [c for _, c in entries]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("min_count", [1, 2, 3])
def test_build_matches_brute_force(seed, min_count):
    rng = random.Random(seed)
    tokens = [f"t{int(rng.paretovariate(1.0))}" for _ in range(300)]
    vocab = Vocab.build(tokens, min_count=min_count)
    words, counts = reference_vocab(tokens, min_count)
    assert vocab.words == words
    assert vocab.counts == counts
    assert sum(vocab.counts) == len(tokens)
    assert vocab.counts == sorted(vocab.counts, reverse=True)


def test_ties_keep_first_occurrence_and_unk_follows_its_equals():
    vocab = Vocab.build("b a a b c d e".split(), min_count=2)
    assert vocab.words == ["<unk>", "b", "a"]
    assert vocab.counts == [3, 2, 2]
    vocab = Vocab.build("x x y y z".split(), min_count=2)
    assert vocab.words == ["x", "y", "<unk>"] and vocab.counts == [2, 2, 1]


def test_literal_unk_tokens_add_to_the_merged_count():
    # PTB already contains <unk>; merging must add to it, not create a second entry.
    vocab = Vocab.build("<unk> <unk> a a a b".split(), min_count=2)
    assert vocab.words == ["a", "<unk>"]
    assert vocab.counts == [3, 3]


def test_unk_is_present_even_when_nothing_is_merged():
    vocab = Vocab.build("a b b".split())
    assert vocab.words == ["b", "a", "<unk>"]
    assert vocab.counts == [2, 1, 0]
    assert vocab.index("never-seen") == vocab.unk_id == 2


def test_max_size_bounds_the_whole_vocabulary():
    tokens = "a a a a b b b c c d".split()
    vocab = Vocab.build(tokens, max_size=3)
    assert len(vocab) == 3
    assert vocab.words == ["a", "b", "<unk>"]  # c (2) + d (1) merged: unk's 3 ties with b, goes after
    assert vocab.counts == [4, 3, 3]


def test_max_size_keeps_the_most_frequent_words():
    tokens = "a a a a b b b c c d".split()
    vocab = Vocab.build(tokens, max_size=4)
    assert vocab.words == ["a", "b", "c", "<unk>"]
    assert vocab.counts == [4, 3, 2, 1]


def test_reserved_words_are_never_merged():
    tokens = "a a a </s> b".split()
    vocab = Vocab.build(tokens, min_count=2, reserved=["</s>"])
    assert "</s>" in vocab and "b" not in vocab
    vocab = Vocab.build(tokens, max_size=2, reserved=["</s>"])
    assert vocab.words == ["<unk>", "</s>"]
    assert vocab.counts == [4, 1]
    with pytest.raises(DataError, match="max_size=1"):
        Vocab.build(tokens, max_size=1, reserved=["</s>"])


def test_bad_build_arguments():
    with pytest.raises(ConfigError, match="min_count"):
        Vocab.build(["a"], min_count=0)
    with pytest.raises(ConfigError, match="max_size"):
        Vocab.build(["a"], max_size=0)
    with pytest.raises(DataError, match="unk=None"):
        Vocab.build("a a b".split(), min_count=2, unk=None)


def test_lookups_encode_decode():
    vocab = Vocab.build("the cat the mat".split())
    ids = vocab.encode(["the", "mat", "dog"])
    assert ids.dtype == torch.long
    assert ids.tolist() == [0, 2, vocab.unk_id]
    assert vocab.decode(ids) == ["the", "mat", "<unk>"]
    assert vocab.decode([1]) == ["cat"]
    with pytest.raises(DataError, match="outside the vocabulary"):
        vocab.decode([len(vocab)])
    with pytest.raises(DataError, match="outside the vocabulary"):
        vocab.decode(torch.tensor([-1]))


def test_unknown_word_without_unk_is_a_keyerror_and_a_dataerror():
    vocab = Vocab(["a", "b"], [2, 1], unk=None)
    assert vocab.unk_id is None
    with pytest.raises(UnknownWordError) as info:
        vocab.index("c")
    assert isinstance(info.value, KeyError) and isinstance(info.value, DataError)
    assert str(info.value) == "word 'c' is not in the vocabulary, which has no unknown symbol"


@pytest.mark.parametrize(
    "words, counts, unk, message",
    [
        (["a", "a"], [1, 1], None, "appears twice"),
        (["a"], [1, 2], None, "1 words but 2 counts"),
        ([], [], None, "empty"),
        (["a\tb"], [1], None, "tabs or newlines"),
        ([""], [1], None, "non-empty"),
        (["a"], [-1], None, "non-negative"),
        (["a"], [1], "<unk>", "not in the vocabulary"),
    ],
)
def test_bad_constructor_arguments(words, counts, unk, message):
    with pytest.raises(DataError, match=message):
        Vocab(words, counts, unk=unk)


@pytest.mark.parametrize("unk", ["<unk>", None])
def test_save_load_round_trip(tmp_path, unk):
    words = ["the", "<unk>", "a b", "é"] if unk else ["the", "a b", "é"]
    vocab = Vocab(words, list(range(len(words), 0, -1)), unk=unk)
    vocab.save(tmp_path / "vocab.tsv")
    loaded = Vocab.load(tmp_path / "vocab.tsv")
    assert loaded == vocab
    assert loaded.unk_id == vocab.unk_id
    assert Vocab.from_dict(vocab.to_dict()) == vocab


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        ("the\t3\n", "not a bigvocab vocabulary file"),
        ("#bigvocab-vocab\tunk=<unk>\n<unk>\t3\nthe three\n", "line 3"),
        ("#bigvocab-vocab\tunk=<unk>\n<unk>\t3\nthe\t2\nthe\t1\n", "'the' appears twice"),
        ("#bigvocab-vocab\tunk=<unk>\nthe\t2\n", "not in the vocabulary"),
        (b"#bigvocab-vocab\tunk=\n\xff\t2\n", "UTF-8"),
    ],
)
def test_load_errors(assert_read_error, content, message):
    assert_read_error(Vocab.load, content, message)


def test_from_dict_errors():
    with pytest.raises(DataError, match="lacks counts"):
        Vocab.from_dict({"words": ["a"], "unk": None})
