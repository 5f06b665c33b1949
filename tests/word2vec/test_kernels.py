"""The engine's update of one example is one SGD step of the torch model on that example, with
word2vec's table for the logistic function.

The torch models' losses (``bigvocab.models.word2vec`` with ``word2vec_updates=True``) have
word2vec's gradients, so ``param - alpha * grad`` is the update word2vec.c and gensim apply, but
for the logistic function, which they read from a table (:func:`step_size`, tested exactly here
against word2vec.c's formula). The kernels must reproduce the torch step on the same tensors
(output rows distinct, so the order of word2vec's in-place updates does not matter) to within
what the table changes: each error term by at most ALPHA * TABLE_GAP.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from bigvocab.kernels.word2vec import (
    MAX_EXP,
    cbow_window,
    load_staged,
    sg_pair,
    sg_window_shared,
    step_size,
    sync_staged,
    table_sigmoid,
)
from bigvocab.models import build_model
from bigvocab.word2vec.engine import engine_arrays, staging

V, H, ALPHA = 12, 6, 0.3
COUNTS = list(range(60, 0, -5))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _word2vec_sigmoid(f: float) -> float:
    """word2vec.c's read of its table: sigmoid at -6 + 12 i / 1000, i = (int)((f + 6) * (1000 / 6 / 2))
    in C, whose integer division makes the scale 83."""
    return _sigmoid(-6.0 + 12.0 * int((f + 6.0) * (1000 // 6 // 2)) / 1000)


#: The largest gap between the table's sigmoid and the exact one (about 0.009, near f = 6)...
TABLE_GAP = max(abs(table_sigmoid(f) - _sigmoid(f)) for f in np.linspace(-MAX_EXP + 1e-6, MAX_EXP - 1e-6, 20001))
#: ... so a parameter of these examples (entries within +-0.5) moves by at most ALPHA * TABLE_GAP * 0.5
#: per error term away from the torch step, and none sums more than 12 terms (3 contexts x 4 outputs).
TOLERANCE = {"rtol": 0.0, "atol": ALPHA * TABLE_GAP * 0.5 * 12}


def _model(name: str, output: str, **model_kwargs):
    output_kwargs = {"bias": False} if output == "hsm" else {"num_samples": 3}
    model = build_model(
        name,
        V,
        output,
        counts=COUNTS,
        model_kwargs={"vector_size": H, "sample": 0, **model_kwargs},
        output_kwargs=output_kwargs,
    )
    with torch.no_grad():  # non-zero output rows, so both sides of the update are exercised
        model.output.weight.uniform_(-0.5, 0.5)
        model.embedding.weight.uniform_(-0.5, 0.5)
    return model


def _fix_negatives(model, negatives: list[int]) -> np.ndarray:
    ids = torch.tensor([negatives])
    model.output._draw = lambda batch_size, **_: (ids.expand(batch_size, -1), len(negatives))
    return np.array(negatives, dtype=np.int64)


def _row_scratch() -> tuple[np.ndarray, np.ndarray]:
    """The kernels' (rows, steps) scratch, longer than any example here needs."""
    return np.zeros(V, dtype=np.int64), np.zeros(V, dtype=np.float32)


def _unstaged() -> tuple:
    """The kernels' staging arguments (depth, slot_of, local) when no row is staged, then every
    vector free to train (lockf) and no loss tallied."""
    return 0, np.zeros(1, dtype=np.int64), np.zeros((0, H), dtype=np.float32), *_free()


def _free() -> tuple:
    """(lockf, loss): every vector trains, no loss tallied."""
    return np.ones(V, dtype=np.float32), np.zeros(0)


def _sgd_step(model, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(embedding, output weight) after one SGD step of rate ALPHA on ``batch``'s loss."""
    model.zero_grad()
    model.loss(batch).backward()
    emb, out = model.embedding.weight, model.output.weight
    return (emb - ALPHA * emb.grad.to_dense()).detach(), (out - ALPHA * out.grad.to_dense()).detach()


@pytest.mark.parametrize("output", ["neg", "hsm"])
def test_skipgram_pair_is_one_sgd_step(output):
    model = _model("skipgram", output)
    negatives = _fix_negatives(model, [7, 2, 9]) if output == "neg" else np.zeros(0, dtype=np.int64)
    source, target = 4, 1
    want_emb, want_out = _sgd_step(model, {"centre": torch.tensor([source]), "target": torch.tensor([target])})
    a = engine_arrays(model)
    sg_pair(
        a.syn0,
        a.syn1,
        source,
        target,
        a.hs,
        a.path_offsets,
        a.path_rows,
        a.path_codes,
        negatives,
        ALPHA,
        np.zeros((1, H), dtype=np.float32),
        *_row_scratch(),
        *_unstaged(),
    )
    assert not torch.equal(want_emb, model.embedding.weight.detach())  # the step moved something
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, **TOLERANCE)
    torch.testing.assert_close(model.output.weight.detach(), want_out, **TOLERANCE)


@pytest.mark.parametrize("output", ["neg", "hsm"])
@pytest.mark.parametrize("cbow_mean", [True, False])
def test_cbow_window_is_one_sgd_step(output, cbow_mean):
    model = _model("cbow", output, window=2, cbow_mean=cbow_mean)
    negatives = _fix_negatives(model, [0, 5, 11]) if output == "neg" else np.zeros(0, dtype=np.int64)
    context, target = [3, 8, 3], 6  # a repeated context word receives the error twice
    batch = {
        "context": torch.tensor([context + [0]]),
        "mask": torch.tensor([[True, True, True, False]]),
        "target": torch.tensor([target]),
    }
    want_emb, want_out = _sgd_step(model, batch)
    a = engine_arrays(model)
    cbow_window(
        a.syn0,
        a.syn1,
        np.array(context, dtype=np.int32),
        len(context),
        target,
        cbow_mean,
        a.hs,
        a.path_offsets,
        a.path_rows,
        a.path_codes,
        negatives,
        ALPHA,
        np.zeros((1, H), dtype=np.float32),
        np.zeros((1, H), dtype=np.float32),
        *_row_scratch(),
        *_unstaged(),
    )
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, **TOLERANCE)
    torch.testing.assert_close(model.output.weight.detach(), want_out, **TOLERANCE)


@pytest.mark.parametrize("max_rows", [1, 3, 63])
@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_staged_tree_rows_give_the_same_step_once_merged(name, max_rows):
    """A thread that moves its own copies of the top tree rows (the root; root and children; the
    whole tree here) and merges them takes the same SGD step as one that moves the shared rows."""
    model = _model(name, "hsm", window=2)
    a = engine_arrays(model)
    stage = staging(a, workers=2, shared=False, max_rows=max_rows)
    assert stage.depth >= 1 and stage.rows.shape[0] <= max_rows
    assert np.array_equal(stage.slot_of[stage.rows], np.arange(stage.rows.shape[0]))
    if name == "skipgram":
        batch = {"centre": torch.tensor([4]), "target": torch.tensor([1])}
    else:
        batch = {"context": torch.tensor([[3, 8]]), "mask": torch.tensor([[True, True]]), "target": torch.tensor([6])}
    want_emb, want_out = _sgd_step(model, batch)
    local = np.empty((stage.rows.shape[0], H), dtype=np.float32)
    base = np.empty_like(local)
    load_staged(a.syn1, stage.rows, local, base)
    staged_args = (stage.depth, stage.slot_of, local)
    work = np.zeros((1, H), dtype=np.float32)
    none = np.zeros(0, dtype=np.int64)
    if name == "skipgram":
        sg_pair(
            a.syn0,
            a.syn1,
            4,
            1,
            True,
            a.path_offsets,
            a.path_rows,
            a.path_codes,
            none,
            ALPHA,
            work,
            *_row_scratch(),
            *staged_args,
            *_free(),
        )
    else:
        cbow_window(
            a.syn0,
            a.syn1,
            np.array([3, 8], dtype=np.int32),
            2,
            6,
            True,
            True,
            a.path_offsets,
            a.path_rows,
            a.path_codes,
            none,
            ALPHA,
            np.zeros((1, H), dtype=np.float32),
            work,
            *_row_scratch(),
            *staged_args,
            *_free(),
        )
    staged_rows = torch.from_numpy(stage.rows)
    assert torch.equal(model.output.weight.detach()[staged_rows], torch.from_numpy(base))  # not merged yet
    sync_staged(a.syn1, stage.rows, local, base)
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, **TOLERANCE)
    torch.testing.assert_close(model.output.weight.detach(), want_out, **TOLERANCE)
    assert np.array_equal(local, a.syn1[stage.rows]) and np.array_equal(base, local)


def test_sync_adds_each_threads_moves_to_the_shared_rows():
    """Two threads' copies of the same rows, merged one after the other: the shared rows end with
    both threads' moves, and each copy with what was shared when it merged."""
    shared = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = np.array([3, 1])
    copies = []
    for _ in range(2):
        local, base = np.empty((2, 3), dtype=np.float32), np.empty((2, 3), dtype=np.float32)
        load_staged(shared, rows, local, base)
        copies.append((local, base))
    copies[0][0][:] += 1.0
    copies[1][0][0] -= 0.5
    sync_staged(shared, rows, *copies[0])
    sync_staged(shared, rows, *copies[1])
    want = np.arange(12, dtype=np.float32).reshape(4, 3)
    want[[3, 1]] += 1.0
    want[3] -= 0.5
    np.testing.assert_array_equal(shared, want)
    np.testing.assert_array_equal(copies[1][0], want[rows])
    np.testing.assert_array_equal(copies[0][0], want[rows] + np.array([[0.5], [0.0]], dtype=np.float32))


def test_no_rows_are_staged_for_one_thread_hogbatch_or_negative_sampling():
    tree = engine_arrays(_model("skipgram", "hsm"))
    assert staging(tree, workers=1, shared=False).depth == 0
    assert staging(engine_arrays(_model("skipgram", "neg")), workers=2, shared=False).depth == 0
    assert staging(tree, workers=2, shared=True).depth == 0
    assert staging(tree, workers=2, shared=False, max_rows=0).depth == 0


def test_hogbatch_window_is_one_sgd_step_on_the_window():
    """HogBatch: every (context, centre) pair of a window against one negative set, all from
    the window's old values -- one SGD step on the sum of the window's pair losses."""
    model = _model("skipgram", "neg")
    negatives = _fix_negatives(model, [7, 2, 9])
    context, centre = [4, 10, 3], 1
    batch = {"centre": torch.tensor(context), "target": torch.tensor([centre] * len(context))}
    want_emb, want_out = _sgd_step(model, batch)
    a = engine_arrays(model)
    sg_window_shared(
        a.syn0,
        a.syn1,
        np.array(context, dtype=np.int32),
        len(context),
        centre,
        negatives,
        ALPHA,
        np.zeros((4, H), dtype=np.float32),
        np.zeros((4, 4), dtype=np.float32),
        *_free(),
    )
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, **TOLERANCE)
    torch.testing.assert_close(model.output.weight.detach(), want_out, **TOLERANCE)


@pytest.mark.parametrize("hs", [False, True])
def test_saturated_outputs_are_skipped_as_gensim_does(hs):
    """Beyond MAX_EXP on either side nothing moves, as in gensim (word2vec.c's negative sampling
    takes the full step on the wrong side)."""
    for f in (MAX_EXP, MAX_EXP + 0.5, -MAX_EXP, -MAX_EXP - 0.5):
        for label in (0.0, 1.0):
            assert step_size(f, label, ALPHA, hs) == 0.0


@pytest.mark.parametrize("f", [-5.999, -2.3, -0.004, 0.0, 0.004, 0.7, 5.999])
@pytest.mark.parametrize("label", [0.0, 1.0])
def test_steps_read_word2vecs_sigmoid_table(f, label):
    """Negative sampling: alpha (label - table(f)), gensim's step. A tree node: bigvocab's node
    vector is gensim's negated (its label is gensim's code flipped), so the step is gensim's with
    the table read at -f: alpha (label - 1 + table(-f))."""
    rounding = ALPHA * 2.0**-23  # the table holds float32 values below 1
    want_neg, want_tree = ALPHA * (label - _word2vec_sigmoid(f)), ALPHA * (label - 1 + _word2vec_sigmoid(-f))
    assert step_size(f, label, ALPHA, False) == pytest.approx(want_neg, rel=0, abs=rounding)
    assert step_size(f, label, ALPHA, True) == pytest.approx(want_tree, rel=0, abs=rounding)


def test_the_table_leans_towards_label_one():
    """At f = 0 word2vec.c reads sigmoid(-0.024), not 0.5: the lean gensim's vectors have."""
    assert table_sigmoid(0.0) == pytest.approx(_sigmoid(-0.024), rel=1e-6)
    assert 0.0 < 0.5 - table_sigmoid(0.0) < TABLE_GAP


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


@pytest.mark.parametrize("output", ["neg", "hsm"])
def test_loss_tally_is_the_examples_negative_log_likelihood(output):
    """compute_loss: the tally is -log sigmoid(+-u . h) summed over the example's decisions, read
    before the rows move (brute force from the arrays)."""
    model = _model("skipgram", output)
    negatives = np.array([7, 2, 9], dtype=np.int64) if output == "neg" else np.zeros(0, dtype=np.int64)
    a = engine_arrays(model)
    source, target = 4, 1
    h = a.syn0[source].astype(np.float64)
    if output == "neg":
        want = -_log_sigmoid(a.syn1[target] @ h) - _log_sigmoid(-(a.syn1[negatives] @ h)).sum()
    else:
        path = slice(a.path_offsets[target], a.path_offsets[target + 1])
        signs = 2.0 * a.path_codes[path] - 1
        want = -_log_sigmoid(signs * (a.syn1[a.path_rows[path]] @ h)).sum()
    loss = np.zeros(1)
    lockf = np.ones(V, dtype=np.float32)
    work = np.zeros((1, H), dtype=np.float32)
    sg_pair(a.syn0, a.syn1, source, target, a.hs, a.path_offsets, a.path_rows, a.path_codes, negatives, ALPHA,
            work, *_row_scratch(), *_unstaged()[:3], lockf, loss)  # fmt: skip
    assert loss[0] == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_lockf_scales_the_input_rows_steps(name):
    """gensim's vectors_lockf: 0 freezes a word's vector, 0.5 moves it half as far; the output rows
    move as without it."""
    moved = {}
    for factor in (1.0, 0.5, 0.0):
        torch.manual_seed(0)  # the same starting rows each time
        model = _model(name, "neg")
        negatives = np.array([7, 2, 9], dtype=np.int64)
        a = engine_arrays(model)
        before = a.syn0.copy()
        lockf = np.ones(V, dtype=np.float32)
        lockf[[3, 4, 8]] = factor
        scratch = (np.zeros((1, H), dtype=np.float32), *_row_scratch(), *_unstaged()[:3], lockf, np.zeros(0))
        if name == "skipgram":
            sg_pair(a.syn0, a.syn1, 4, 1, False, a.path_offsets, a.path_rows, a.path_codes, negatives, ALPHA, *scratch)
        else:
            cbow_window(a.syn0, a.syn1, np.array([3, 8], dtype=np.int32), 2, 6, True, False, a.path_offsets,
                        a.path_rows, a.path_codes, negatives, ALPHA, np.zeros((1, H), dtype=np.float32), *scratch)  # fmt: skip
        moved[factor] = (a.syn0 - before, a.syn1.copy())
    np.testing.assert_allclose(moved[0.5][0], 0.5 * moved[1.0][0], rtol=1e-5, atol=1e-7)
    assert not moved[0.0][0].any() and moved[1.0][0].any()
    np.testing.assert_array_equal(moved[0.0][1], moved[1.0][1])
