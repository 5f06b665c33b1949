"""The engine's update of one example equals one SGD step of the torch model on that example.

The torch models' losses (``bigvocab.models.word2vec`` with ``word2vec_updates=True``) have
word2vec's gradients, so ``param - alpha * grad`` is the update word2vec.c and gensim apply; the
compiled kernels must reproduce it on the same tensors (output rows distinct, so the order of
word2vec's in-place updates does not matter).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from bigvocab.models import build_model  # noqa: E402
from bigvocab.word2vec.engine import engine_arrays  # noqa: E402
from bigvocab.word2vec.kernels import cbow_window, sg_pair, sg_window_shared  # noqa: E402

V, H, ALPHA = 12, 6, 0.3
COUNTS = list(range(60, 0, -5))


def _model(name: str, output: str, **model_kwargs):
    output_kwargs = {"bias": False} if output == "hsm" else {"num_samples": 3}
    model = build_model(name, V, output, counts=COUNTS, model_kwargs={"vector_size": H, "sample": 0, **model_kwargs},
                        output_kwargs=output_kwargs)
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
    sg_pair(a.syn0, a.syn1, source, target, a.hs, a.path_offsets, a.path_rows, a.path_codes, negatives, ALPHA,
            np.zeros((1, H), dtype=np.float32), *_row_scratch())
    assert not torch.equal(want_emb, model.embedding.weight.detach())  # the step moved something
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.output.weight.detach(), want_out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("output", ["neg", "hsm"])
@pytest.mark.parametrize("cbow_mean", [True, False])
def test_cbow_window_is_one_sgd_step(output, cbow_mean):
    model = _model("cbow", output, window=2, cbow_mean=cbow_mean)
    negatives = _fix_negatives(model, [0, 5, 11]) if output == "neg" else np.zeros(0, dtype=np.int64)
    context, target = [3, 8, 3], 6  # a repeated context word receives the error twice
    batch = {"context": torch.tensor([context + [0]]), "mask": torch.tensor([[True, True, True, False]]),
             "target": torch.tensor([target])}
    want_emb, want_out = _sgd_step(model, batch)
    a = engine_arrays(model)
    cbow_window(a.syn0, a.syn1, np.array(context, dtype=np.int32), len(context), target, cbow_mean, a.hs,
                a.path_offsets, a.path_rows, a.path_codes, negatives, ALPHA, np.zeros((1, H), dtype=np.float32),
                np.zeros((1, H), dtype=np.float32), *_row_scratch())
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.output.weight.detach(), want_out, rtol=1e-5, atol=1e-6)


def test_hogbatch_window_is_one_sgd_step_on_the_window():
    """HogBatch: every (context, centre) pair of a window against one negative set, all from
    the window's old values -- one SGD step on the sum of the window's pair losses."""
    model = _model("skipgram", "neg")
    negatives = _fix_negatives(model, [7, 2, 9])
    context, centre = [4, 10, 3], 1
    batch = {"centre": torch.tensor(context), "target": torch.tensor([centre] * len(context))}
    want_emb, want_out = _sgd_step(model, batch)
    a = engine_arrays(model)
    sg_window_shared(a.syn0, a.syn1, np.array(context, dtype=np.int32), len(context), centre, negatives, ALPHA,
                     np.zeros((4, H), dtype=np.float32), np.zeros((4, 4), dtype=np.float32))
    torch.testing.assert_close(model.embedding.weight.detach(), want_emb, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.output.weight.detach(), want_out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hs", [False, True])
def test_saturated_outputs_are_skipped_as_word2vec_does(hs):
    """Beyond MAX_EXP on the label's side the error is under 0.0025 and nothing moves; on the
    wrong side negative sampling takes the full step (word2vec.c's clipped sigmoid) and a tree
    node is skipped (word2vec.c's hierarchical softmax)."""
    from bigvocab.word2vec.kernels import MAX_EXP, step_size

    f = MAX_EXP + 0.5
    assert step_size(f, 1.0, ALPHA, hs) == 0.0 and step_size(-f, 0.0, ALPHA, hs) == 0.0
    wrong = step_size(-f, 1.0, ALPHA, hs)
    assert wrong == (0.0 if hs else pytest.approx(ALPHA))
    inside = step_size(0.3, 1.0, ALPHA, hs)
    assert inside == pytest.approx(ALPHA * (1 - 1 / (1 + np.exp(-0.3))), rel=1e-5)
