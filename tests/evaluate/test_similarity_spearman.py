"""Spearman with tied ranks against scipy, and the word-pair evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bigvocab.errors import DataError
from bigvocab.evaluate.similarity import average_ranks, evaluate_similarity, read_word_pairs, spearman
from bigvocab.evaluate.vectors import WordVectors


def test_average_ranks_share_ties():
    assert average_ranks([10, 20, 10, 30, 20, 10]).tolist() == [2, 4.5, 2, 6, 4.5, 2]


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=40).astype(float)  # many ties
    y = x + rng.normal(0, 2, size=40)
    y[:10] = np.round(y[:10])
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_edge_cases():
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman([1], [2]))
    with pytest.raises(DataError):
        spearman([1, 2], [1])


def test_evaluate_similarity_counts_oov_and_matches_direct_computation(tmp_path):
    stats = pytest.importorskip("scipy.stats")
    generator = torch.Generator().manual_seed(0)
    words = ["tiger", "cat", "car", "Train", "sun"]
    vectors = WordVectors(words, torch.randn(5, 4, generator=generator))
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "# comment\nWord 1\tWord 2\tHuman (mean)\ntiger\tcat\t7.35\ncar\ttrain\t6.3\n"
        "sun\tcat\t1.0\ntiger\tzebra\t5.0\n\ncar\tsun\t2.5\n"
    )
    result = evaluate_similarity(vectors, path)
    assert (result.pairs, result.skipped) == (4, 1)
    unit = vectors.unit
    cos = [float(unit[a] @ unit[b]) for a, b in [(0, 1), (2, 3), (4, 1), (2, 4)]]
    assert result.spearman == pytest.approx(stats.spearmanr(cos, [7.35, 6.3, 1.0, 2.5]).statistic)


@pytest.mark.parametrize(
    "content, message",
    [("a\tb\t1\nc\td\tlots\n", "line 2: score 'lots'"), ("a\tb\n", "line 1"), (None, "does not exist")],
)
def test_pair_file_errors(assert_read_error, content, message):
    assert_read_error(read_word_pairs, content, message)


@pytest.mark.parametrize("name, count", [("wordsim353.tsv", 353), ("simlex999.txt", 999)])
def test_real_files_parse(data_dir, name, count):
    path = data_dir / "eval" / name
    if not path.exists():
        pytest.skip(f"{name} not available")
    pairs = read_word_pairs(path)
    assert len(pairs) == count
    words = sorted({w for a, b, _ in pairs for w in (a, b)})
    result = evaluate_similarity(WordVectors(words, torch.randn(len(words), 8)), pairs)
    assert result.pairs == count and result.skipped == 0 and -1 <= result.spearman <= 1
