"""The batch counts that progress bars show agree with the batches the generators yield."""

from __future__ import annotations

import pytest
import torch

from bigvocab.data.batching import bptt_segment_count, bptt_segments, index_batch_count, index_batches
from bigvocab.models import build_model


@pytest.mark.parametrize("num, batch_size", [(1, 1), (10, 3), (12, 4), (7, 100)])
def test_index_batch_count(num, batch_size):
    batches = index_batches(num, batch_size, shuffle=False, generator=None, device=torch.device("cpu"))
    assert index_batch_count(num, batch_size) == sum(1 for _ in batches)


@pytest.mark.parametrize("num_ids, batch_size, bptt", [(2, 1, 1), (101, 4, 7), (100, 3, 35), (50, 64, 5), (33, 8, 4)])
def test_bptt_segment_count(num_ids, batch_size, bptt):
    segments = bptt_segments(torch.arange(num_ids), batch_size, bptt)
    assert bptt_segment_count(num_ids, batch_size, bptt) == sum(1 for _ in segments)


@pytest.mark.parametrize(
    "name, output, options",
    [
        ("nnlm", "full", {"context": 2, "embedding_dim": 4, "hidden_dim": 4}),
        ("lstm", "full", {"embedding_dim": 4, "hidden_dim": 4, "bptt": 5}),
        ("cw", None, {"window": 1, "embedding_dim": 4, "hidden_dim": 4}),
    ],
)
def test_models_count_their_batches(name, output, options):
    model = build_model(name, 20, output, model_kwargs=options)
    ids = torch.randint(0, 20, (97,), generator=torch.Generator().manual_seed(0))
    for train in (True, False):
        assert model.num_batches(ids, 8) == sum(1 for _ in model.batches(ids, 8, train=train))


@pytest.mark.parametrize("name", ["skipgram", "cbow"])
@pytest.mark.parametrize("num_ids, window", [(1, 3), (2, 3), (4, 3), (97, 3), (97, 1), (60, 5)])
def test_word2vec_counts_its_batches(name, num_ids, window):
    """Exact for evaluation; an upper bound for training, which shrinks windows and subsamples."""
    model = build_model(
        name,
        20,
        "neg",
        counts=[50 - i for i in range(20)],
        model_kwargs={"vector_size": 4, "window": window, "sample": 1e-2},
    )
    ids = torch.randint(0, 20, (num_ids,), generator=torch.Generator().manual_seed(0))
    for batch_size in (1, 8):
        if num_ids >= 2:
            assert model.num_batches(ids, batch_size) == sum(1 for _ in model.batches(ids, batch_size, train=False))
            for seed in range(3):
                drawn = model.batches(ids, batch_size, train=True, generator=torch.Generator().manual_seed(seed))
                assert sum(1 for _ in drawn) <= model.num_batches(ids, batch_size)
        else:
            assert model.num_batches(ids, batch_size) == 0
