"""3CosAdd analogies: a constructed space where they hold, a brute-force loop, gensim, real file."""

from __future__ import annotations

import pytest
import torch

from bigvocab.evaluate.analogy import evaluate_analogies, read_analogies
from bigvocab.evaluate.vectors import WordVectors

QUESTIONS = """: capital-common-countries
Athens Greece Paris France
Paris France Athens Greece
Athens Greece Rome Zorbania
: gram-plural
king kings queen queens
man men woman women
king kings man men
"""


def test_constructed_offsets_are_all_answered(tmp_path):
    """Words built as base + offset vectors: b - a + c lands exactly on d."""
    generator = torch.Generator().manual_seed(0)
    basis = torch.randn(8, 40, generator=generator)
    city, country, noun, plural = basis[0], basis[1], basis[2], basis[3]
    entity = {
        "athens": basis[4],
        "paris": basis[5],
        "rome": basis[6],
        "king": basis[7],
        "queen": -basis[4] + basis[6],
        "man": basis[5] - basis[7],
        "woman": basis[4] + basis[7],
    }
    rows = {}
    for name in ("athens", "paris"):
        rows[name] = entity[name] + city
    rows["greece"], rows["france"] = entity["athens"] + country, entity["paris"] + country
    for noun_name in ("king", "queen", "man", "woman"):
        rows[noun_name] = entity[noun_name] + noun
        rows[{"king": "kings", "queen": "queens", "man": "men", "woman": "women"}[noun_name]] = (
            entity[noun_name] + plural
        )
    rows["Rome"] = entity["rome"] + city
    path = tmp_path / "q.txt"
    path.write_text(QUESTIONS)
    result = evaluate_analogies(WordVectors(list(rows), torch.stack(list(rows.values()))), path)
    assert [(s.name, s.correct, s.total, s.skipped) for s in result.sections] == [
        ("capital-common-countries", 2, 2, 1),
        ("gram-plural", 3, 3, 0),
    ]
    assert result.accuracy == 1.0 and result.semantic_accuracy == 1.0 and result.syntactic_accuracy == 1.0


def brute_force(vectors: WordVectors, sections, limit):
    """One question at a time, the way the definition reads."""
    table = vectors.lowercase_index(limit)
    unit = vectors.unit
    counts = []
    for _, questions in sections:
        correct = total = skipped = 0
        for question in questions:
            if not all(w in table for w in question):
                skipped += 1
                continue
            total += 1
            a, b, c, d = (table[w] for w in question)
            target = unit[b] - unit[a] + unit[c]
            best, best_score = None, -float("inf")
            for row in range(limit):
                lowered = vectors.words[row].lower()
                if table[lowered] in (a, b, c):
                    continue
                score = float(unit[row] @ target)
                if score > best_score:
                    best, best_score = row, score
            correct += vectors.words[best].lower() == vectors.words[d].lower()
        counts.append((correct, total, skipped))
    return counts


def random_space(num_words: int, dim: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    words = [f"w{i}" for i in range(num_words)]
    words[3], words[9] = "W1", "w3x"  # "W1" folds onto "w1", which is more frequent
    return WordVectors(words, torch.randn(num_words, dim, generator=generator))


def random_questions(num_questions: int, num_words: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, num_words + 5, (num_questions, 4), generator=generator)
    questions = [tuple(f"w{i}" for i in row.tolist()) for row in ids]
    return [("gram-random", questions[: num_questions // 2]), ("random", questions[num_questions // 2 :])]


@pytest.mark.parametrize("limit", [None, 40])
def test_batched_equals_brute_force(limit):
    vectors = random_space(60, 5, seed=1)
    sections = random_questions(300, 60, seed=2)
    result = evaluate_analogies(vectors, sections, restrict_vocab=limit)
    expected = brute_force(vectors, sections, limit or 60)
    assert [(s.correct, s.total, s.skipped) for s in result.sections] == expected
    assert result.total + result.skipped == 300
    assert result.correct > 0  # low dimension: some random questions are answered right


def test_agrees_with_gensim(tmp_path):
    gensim_models = pytest.importorskip("gensim.models")
    vectors = random_space(60, 5, seed=3)
    sections = random_questions(200, 60, seed=4)
    path = tmp_path / "q.txt"
    path.write_text("".join(f": {name}\n" + "".join(" ".join(q) + "\n" for q in qs) for name, qs in sections))
    keyed = gensim_models.KeyedVectors(5)
    keyed.add_vectors(vectors.words, vectors.vectors.numpy())
    _, theirs = keyed.evaluate_word_analogies(str(path), restrict_vocab=50, case_insensitive=True)
    ours = evaluate_analogies(vectors, path, restrict_vocab=50)
    for mine, their in zip(ours.sections, theirs):
        assert mine.name == their["section"]
        assert (mine.correct, mine.total) == (len(their["correct"]), len(their["correct"]) + len(their["incorrect"]))


@pytest.mark.parametrize(
    "content, message",
    [(": s\na b c\n", "line 2: an analogy has 4 words"), (": s\n\n", "no questions"), (None, "does not exist")],
)
def test_file_errors(assert_read_error, content, message):
    assert_read_error(read_analogies, content, message)


def test_google_questions_file(data_dir):
    path = data_dir / "eval" / "questions-words.txt"
    if not path.exists():
        pytest.skip("questions-words.txt not available")
    sections = read_analogies(path)
    assert sum(len(q) for _, q in sections) == 19544 and len(sections) == 14
    words = sorted({w for _, questions in sections for q in questions for w in q})
    vectors = WordVectors(words, torch.randn(len(words), 16))
    result = evaluate_analogies(vectors, sections)
    assert result.total == 19544 and result.skipped == 0
