"""load_corpus: every spec kind on tiny files, the split conventions, and clear errors."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
import torch

import bigvocab.data.corpora as corpora
from bigvocab.data.corpora import EOS, PARAGRAPH_MARK, TEXT_MARK, UNK, Corpus, load_corpus
from bigvocab.data.vocab import Vocab
from bigvocab.errors import ConfigError, DataError, UnknownNameError

LINES = [f"s{i} the w{i % 3} end" for i in range(10)]


def stream_of(lines: list[str]) -> list[str]:
    return [t for line in lines for t in line.split() + [EOS]]


def expected_vocab(train_tokens: list[str], **kwargs) -> Vocab:
    return Vocab.build(train_tokens, reserved=(EOS,), **kwargs)


def words(ids: torch.Tensor, vocab: Vocab) -> list[str]:
    return vocab.decode(ids)


def test_text_splits_lines_80_10_10(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES[:8]) + "\n\n  \n" + "\n".join(LINES[8:]) + "\n")  # blank lines skipped
    corpus = load_corpus(f"text:{path}", progress=False)
    assert isinstance(corpus, Corpus)
    assert corpus.vocab == expected_vocab(stream_of(LINES[:8]))
    assert words(corpus.train, corpus.vocab) == stream_of(LINES[:8])
    unk = corpus.vocab.unk
    assert words(corpus.valid, corpus.vocab) == [unk, "the", "w2", "end", EOS]  # s8 is unseen in train
    assert words(corpus.test, corpus.vocab) == [unk, "the", "w0", "end", EOS]
    assert corpus.meta["words"] == {"train": 32, "valid": 4, "test": 4}
    assert corpus.meta["eos"] == EOS
    assert corpus.floor_perplexity is None
    for split in (corpus.train, corpus.valid, corpus.test):
        assert split.dtype == torch.long and split.dim() == 1


def test_text_with_three_lines_gives_one_line_per_split(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("a b\nb a\na a\n")
    corpus = load_corpus(f"text:{path}", progress=False)
    assert [len(s) for s in (corpus.train, corpus.valid, corpus.test)] == [3, 3, 3]


@pytest.mark.parametrize("pattern", ["ptb.{}.txt", "wiki.{}.tokens", "{}.txt"])
def test_dir_reads_ptb_wikitext_and_plain_names(tmp_path, pattern):
    texts = {
        "train": " a b c <unk> \n a a <unk> b \n",
        "valid": " a zz \n",
        "test": " = Title = \n\n c c \n",
    }
    for split, text in texts.items():
        (tmp_path / pattern.format(split)).write_text(text)
    corpus = load_corpus(f"dir:{tmp_path}", progress=False)
    train_tokens = stream_of(texts["train"].splitlines())
    assert corpus.vocab == expected_vocab(train_tokens)
    assert corpus.vocab.counts[corpus.vocab.unk_id] == 2  # PTB's own <unk> is the unknown symbol
    assert words(corpus.valid, corpus.vocab) == ["a", UNK, EOS]
    assert words(corpus.test, corpus.vocab) == [UNK, UNK, UNK, EOS, "c", "c", EOS]
    assert corpus.meta["files"] == [pattern.format(s) for s in ("train", "valid", "test")]


def test_dir_errors(tmp_path):
    (tmp_path / "train.txt").write_text("a b\n")
    (tmp_path / "valid.txt").write_text("a b\n")
    with pytest.raises(DataError, match=r"no test file \(looked for test.txt or ptb.test.txt or wiki.test.tokens\)"):
        load_corpus(f"dir:{tmp_path}", progress=False)
    (tmp_path / "test.txt").write_text("")
    with pytest.raises(DataError, match=r"test.txt is empty"):
        load_corpus(f"dir:{tmp_path}", progress=False)
    (tmp_path / "test.txt").write_text("a\n")
    (tmp_path / "ptb.test.txt").write_text("a\n")
    with pytest.raises(DataError, match="several test files"):
        load_corpus(f"dir:{tmp_path}", progress=False)


def test_text8_one_line_split_90_5_5_without_eos(tmp_path):
    tokens = [f"t{i % 7}" for i in range(200)]
    path = tmp_path / "text8"
    path.write_text(" " + " ".join(tokens))
    corpus = load_corpus(f"text8:{path}", progress=False)
    assert corpus.meta["eos"] is None and EOS not in corpus.vocab
    assert [len(s) for s in (corpus.train, corpus.valid, corpus.test)] == [180, 10, 10]
    assert words(torch.cat([corpus.train, corpus.valid, corpus.test]), corpus.vocab) == tokens


@pytest.mark.parametrize("kind", ["text8", "text"])
def test_small_read_blocks_never_split_a_word(tmp_path, monkeypatch, kind):
    # Blocks of 5 bytes cut words, lines and a 2-byte UTF-8 character; the reader must carry the
    # unfinished tail over so the result equals one whole read.
    text = "alpha béta gamma\ndelta alpha epsilon\nzeta béta\n" * 3
    path = tmp_path / "corpus"
    path.write_text(text, encoding="utf-8")
    whole = load_corpus(f"{kind}:{path}", progress=False)
    monkeypatch.setattr(corpora, "_READ_BLOCK", 5)
    blocked = load_corpus(f"{kind}:{path}", progress=False)
    assert blocked.vocab == whole.vocab
    for split in ("train", "valid", "test"):
        assert torch.equal(getattr(blocked, split), getattr(whole, split))
    assert "béta" in whole.vocab


def write_brown(folder, files: dict[str, str]) -> None:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


BROWN = {
    "ca01": "\n\n\tThe/at jury/nn said/vbd ./.\n\n\n\tIt/pps cost/vbd 1/2/cd dollar/nn ./.\n",
    "ca02": "\n\tThe/at-tl Court/nn-tl ruled/vbd ./.\n",
    "cb01": "\tA/at jury/nn ruled/vbd ./.\n",
    "README": "BROWN CORPUS notes, not word/tag text\n",
    "CONTENTS": "A. PRESS: REPORTAGE\n",
    "cats.txt": "ca01 news\n",
    "ca01.bak": "junk/nn\n",
}


def test_brown_strips_tags_at_the_last_slash_and_skips_other_files(tmp_path, monkeypatch):
    write_brown(tmp_path / "brown", BROWN)
    options = corpora._Options(None, None, False, None)
    interner, stream, meta = corpora._read_brown("brown:x", str(tmp_path / "brown"), options)
    tokens = [list(interner.ids)[i] for i in stream]
    assert tokens == (
        "The jury said . </s> It cost 1/2 dollar . </s> The Court ruled . </s> A jury ruled . </s>".split()
    )
    assert meta["files"] == 3
    corpus = load_corpus(f"brown:{tmp_path / 'brown'}", progress=False)
    assert corpus.meta["words"] == {"train": 13, "valid": 2, "test": 2}  # 17 words: 80/10/10
    assert "The" in corpus.vocab and "the" not in corpus.vocab  # case kept, as Bengio et al.


def test_brown_bengio_split_and_rare_word_merging(tmp_path, monkeypatch):
    write_brown(tmp_path / "brown", BROWN)
    assert corpora.BENGIO_SPLIT == (800_000, 200_000) and corpora.BENGIO_MIN_COUNT == 4
    monkeypatch.setattr(corpora, "BENGIO_SPLIT", (9, 5))
    monkeypatch.setattr(corpora, "BENGIO_MIN_COUNT", 2)
    corpus = load_corpus(f"brown-bengio:{tmp_path / 'brown'}", progress=False)
    # Bengio's stream: words, a mark after each paragraph (blank-line separated) and each text, no
    # sentence marks; the split counts every token, marks included.
    #   ca01: The jury said . <p> It cost 1/2 dollar . <p> </text>   ca02: The Court ruled . <p> </text>
    #   cb01: A jury ruled . <p> </text>
    assert corpus.meta["words"] == {"train": 9, "valid": 5, "test": 10}
    # Train tokens seen fewer than BENGIO_MIN_COUNT times are merged ("." once), but a mark that
    # the training split has is never merged; "</text>" is not in the training split at all.
    assert corpus.vocab.words == [UNK, PARAGRAPH_MARK]
    assert EOS not in corpus.vocab
    assert words(corpus.train, corpus.vocab) == [UNK, UNK, UNK, UNK, PARAGRAPH_MARK, UNK, UNK, UNK, UNK]
    assert words(corpus.valid, corpus.vocab) == [UNK, PARAGRAPH_MARK, UNK, UNK, UNK]
    assert words(corpus.test, corpus.vocab)[-3:] == [UNK, PARAGRAPH_MARK, UNK]
    assert corpus.meta["min_count"] == 2
    relaxed = load_corpus(f"brown-bengio:{tmp_path / 'brown'}", min_count=1, progress=False)
    assert "jury" in relaxed.vocab and relaxed.meta["min_count"] == 1
    assert words(relaxed.valid, relaxed.vocab)[:3] == [".", PARAGRAPH_MARK, UNK]


def test_brown_errors(tmp_path):
    write_brown(tmp_path / "brown", {"ca01": "The/at jury nn\n"})
    with pytest.raises(DataError, match=r"token 'jury' is not word/tag"):
        load_corpus(f"brown:{tmp_path / 'brown'}", progress=False)
    write_brown(tmp_path / "empty", {"README": "nothing\n"})
    with pytest.raises(DataError, match=r"no Brown corpus files \(ca01 .. cr09\)"):
        load_corpus(f"brown:{tmp_path / 'empty'}", progress=False)
    write_brown(tmp_path / "small", BROWN)
    with pytest.raises(DataError, match="has 24 tokens; brown-bengio needs more than 1,000,000"):
        load_corpus(f"brown-bengio:{tmp_path / 'small'}", progress=False)


def test_cut_keeps_the_sentence_end_with_its_word():
    eos = 9
    stream = np.array([1, 2, eos, 3, 4, eos, 5, eos])
    parts = corpora._cut(stream, stream != eos, [2, 1], eos)
    assert [p.tolist() for p in parts] == [[1, 2, eos], [3], [4, eos, 5, eos]]
    parts = corpora._cut(stream, stream == eos, [1, 1], eos)  # by lines
    assert [p.tolist() for p in parts] == [[1, 2, eos], [3, 4, eos], [5, eos]]


def test_given_vocabulary_encodes_every_split(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n")
    vocab = Vocab(["the", "end", UNK, EOS], [10, 10, 5, 10])
    corpus = load_corpus(f"text:{path}", vocab=vocab, progress=False)
    assert corpus.vocab is vocab
    assert words(corpus.test, vocab) == [UNK, "the", UNK, "end", EOS]
    with pytest.raises(ConfigError, match="cannot apply when a vocabulary is given"):
        load_corpus(f"text:{path}", vocab=vocab, min_count=2, progress=False)


def test_split_whose_every_word_is_unknown(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n")
    with pytest.raises(DataError, match="every word of the train split .* is unknown to the vocabulary"):
        load_corpus(f"text:{path}", vocab=Vocab(["x", UNK, EOS], [1, 1, 1]), progress=False)
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("a b\na\n" if split == "train" else "c d\n")
    with pytest.raises(DataError, match="every word of the valid split"):
        load_corpus(f"dir:{tmp_path}", progress=False)
    with pytest.raises(DataError, match="train split .* unknown"):
        load_corpus(f"text:{path}", min_count=100, progress=False)


def test_vocabulary_without_unk_rejects_unknown_words(tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("a b\n" if split != "test" else "a c\n")
    vocab = Vocab(["a", "b", EOS], [1, 1, 1], unk=None)
    with pytest.raises(DataError, match="has the word 'c', which the vocabulary \\(no unk\\) lacks"):
        load_corpus(f"dir:{tmp_path}", vocab=vocab, progress=False)


@pytest.mark.parametrize(
    "spec, error, message",
    [
        ("brwon:/x", UnknownNameError, "unknown corpus kind 'brwon'; did you mean 'brown'?"),
        ("/some/path", UnknownNameError, "valid: synthetic, text, dir, brown, brown-bengio, text8"),
        ("text:", DataError, "names no path; write text:PATH"),
        ("text:{tmp}/missing.txt", DataError, "does not exist"),
        ("dir:{tmp}/missing", DataError, "does not exist"),
        ("text:{tmp}", DataError, "is a directory; use dir:"),
        ("dir:{tmp}/one.txt", DataError, "is a file; dir: expects a directory"),
        ("text:{tmp}/empty.txt", DataError, "empty.txt is empty"),
        ("text:{tmp}/blank.txt", DataError, "blank.txt is empty"),
        ("text:{tmp}/one.txt", DataError, "has 1 non-empty lines; .* needs at least 3"),
        ("text8:{tmp}/one.txt", DataError, "has 2 words; .* needs at least 3"),
        ("text:{tmp}/latin1.txt", DataError, "is not UTF-8 text .* at byte 7"),
    ],
)
def test_bad_specs_and_files(tmp_path, spec, error, message):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n  \n\t\n")
    (tmp_path / "one.txt").write_text("a b\n")
    (tmp_path / "latin1.txt").write_bytes("abc caf\xe9\n".encode("latin-1"))
    with pytest.raises(error, match=message):
        load_corpus(spec.format(tmp=tmp_path), progress=False)


def test_errors_are_one_line(tmp_path):
    with pytest.raises(DataError) as info:
        load_corpus(f"text:{tmp_path}/missing.txt")
    assert "\n" not in str(info.value)


def test_synthetic_corpus():
    corpus = load_corpus("synthetic:vocab_size=300,num_classes=7,tokens=2000,seed=3")
    assert corpus.vocab.words == [f"w{i}" for i in range(300)]
    assert corpus.vocab.unk_id is None
    assert corpus.vocab.counts == torch.bincount(corpus.train, minlength=300).tolist()
    assert 0 in corpus.vocab.counts  # ids unseen in the sample are kept (class ids must match)
    assert [len(s) for s in (corpus.train, corpus.valid, corpus.test)] == [2000, 200, 200]
    assert corpus.floor_perplexity == pytest.approx(np.exp(corpus.meta["entropy"]))
    assert corpus.meta["words"] == {"train": 2000, "valid": 200, "test": 200}
    assert not torch.equal(corpus.valid, corpus.test)  # independent streams
    again = load_corpus("synthetic:seed=3, tokens=2e3,num_classes=7,vocab_size=300")
    assert torch.equal(again.train, corpus.train) and torch.equal(again.test, corpus.test)
    other = load_corpus("synthetic:vocab_size=300,num_classes=7,tokens=2000,seed=4")
    assert not torch.equal(other.train, corpus.train)
    sized = load_corpus("synthetic:vocab_size=300,num_classes=7,tokens=2000,valid_tokens=50,test_tokens=70")
    assert (len(sized.valid), len(sized.test)) == (50, 70)
    assert load_corpus("synthetic:vocab_size=300,num_classes=7,tokens=100", vocab=corpus.vocab).vocab is corpus.vocab


def test_synthetic_default_is_embedded():
    corpus = load_corpus("synthetic", progress=False)
    assert len(corpus.vocab) == 10000 and len(corpus.train) == 1_000_000
    language = {"vocab_size": 10000, "num_classes": 50, "seed": 0, "zipf": 1.0, "concentration": 0.1}
    assert corpus.meta["language"] == language
    assert 1 < corpus.floor_perplexity < 10000


@pytest.mark.parametrize(
    "spec, message",
    [
        ("synthetic:vocab_size", "'vocab_size' must be key=value"),
        ("synthetic:vocab=100", "unknown synthetic option 'vocab'; did you mean 'vocab_size'?"),
        ("synthetic:vocab_size=big", "vocab_size='big' is not a number"),
        ("synthetic:vocab_size=10.5", "vocab_size='10.5' must be an integer"),
        ("synthetic:seed=1,seed=2", "'seed' is given twice"),
        ("synthetic:vocab_size=10,num_classes=20", "num_classes=20 exceeds vocab_size=10"),
        ("synthetic:tokens=5", "valid split would have 0 tokens"),
        ("synthetic:zipf=-1", "zipf must be"),
    ],
)
def test_bad_synthetic_options(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_corpus(spec)


def test_synthetic_refuses_vocabulary_options():
    with pytest.raises(ConfigError, match="do not apply to the synthetic language"):
        load_corpus("synthetic:vocab_size=100,num_classes=5,tokens=100", min_count=2)
    with pytest.raises(DataError, match="not this synthetic language's w0..w99"):
        load_corpus("synthetic:vocab_size=100,num_classes=5,tokens=100", vocab=Vocab(["a", UNK], [1, 1]))


def test_no_progress_bar_for_small_files(tmp_path, capsys):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n")
    load_corpus(f"text:{path}", progress=True)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_real_brown_bengio(data_dir):
    """Bengio et al. (2003): 800,000 / 200,000 / rest tokens of words plus paragraph and text marks
    (their 1,181,041 tokens "including text and paragraph marks"), rare words (<= 3 in train) merged."""
    brown = data_dir / "brown"
    if not brown.is_dir():
        pytest.skip(f"no Brown corpus at {brown}")
    # Reference reading: plain Python, paragraphs are blank-line separated blocks, tag cut at the last '/'.
    reference = []
    for path in sorted(p for p in brown.iterdir() if re.fullmatch(r"c[a-r]\d\d", p.name)):
        for block in re.split(r"\n\s*\n", path.read_text()):
            if block.split():
                reference.extend([t.rpartition("/")[0] for t in block.split()] + [PARAGRAPH_MARK])
        reference.append(TEXT_MARK)
    corpus = load_corpus(f"brown-bengio:{brown}", progress=False)
    assert len(reference) == 1_177_359  # 1,161,192 words + 15,667 paragraphs + 500 texts
    assert corpus.meta["words"] == {"train": 800_000, "valid": 200_000, "test": len(reference) - 1_000_000}
    counts = Counter(reference[:800_000])
    assert len(corpus.vocab) == sum(1 for c in counts.values() if c > 3) + 1  # + <unk>
    assert corpus.vocab.decode(corpus.test[-5:]) == [w if w in corpus.vocab else UNK for w in reference[-5:]]
    print(f"Brown (Bengio): {len(reference):,} tokens, |V| = {len(corpus.vocab):,}, test {len(corpus.test):,}")
