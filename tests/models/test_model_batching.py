"""The example layouts in ``bigvocab.data.batching`` against brute-force loops."""

from __future__ import annotations

import math

import pytest
import torch

from bigvocab.data.batching import (
    bptt_segments,
    check_stream,
    context_mask,
    index_batches,
    rebatch,
    shrunk_radius,
    subsample,
    subsample_keep_prob,
    windows_at,
)
from bigvocab.errors import ConfigError, DataError


@pytest.mark.parametrize(
    "ids, match",
    [
        ([1, 2, 3], "torch.Tensor"),
        (torch.zeros(2, 3, dtype=torch.long), "1-D"),
        (torch.zeros(4), "integer ids"),
        (torch.tensor([1]), "at least 2"),
        (torch.tensor([1, 9]), "id 9"),
        (torch.tensor([-1, 2]), "id -1"),
    ],
)
def test_check_stream_rejects_bad_streams(ids, match):
    with pytest.raises(DataError, match=match):
        check_stream(ids, 9, min_length=2)


def test_check_stream_returns_int64():
    assert check_stream(torch.tensor([0, 3], dtype=torch.int32), 4, min_length=2).dtype == torch.int64


def test_index_batches_in_order_and_shuffled():
    ordered = torch.cat(list(index_batches(10, 3, shuffle=False, generator=None, device=torch.device("cpu"))))
    assert ordered.tolist() == list(range(10))
    draw = lambda: torch.cat(
        list(index_batches(10, 3, shuffle=True, generator=torch.Generator().manual_seed(3), device=torch.device("cpu")))
    )
    shuffled = draw()
    assert sorted(shuffled.tolist()) == list(range(10)) and shuffled.tolist() != list(range(10))
    assert torch.equal(shuffled, draw())
    with pytest.raises(ConfigError, match="batch_size"):
        next(index_batches(10, 0, shuffle=False, generator=None, device=torch.device("cpu")))


def test_windows_at_matches_loop():
    ids = torch.tensor([5, 6, 7, 8])
    offsets = torch.tensor([-2, -1, 0, 1])
    windows, inside = windows_at(ids, torch.arange(4), offsets, pad_id=99)
    for p in range(4):
        for j, d in enumerate(offsets.tolist()):
            q = p + d
            expected = ids[q].item() if 0 <= q < 4 else 99
            assert windows[p, j].item() == expected
            assert inside[p, j].item() == (0 <= q < 4)


@pytest.mark.parametrize("length, batch_size, bptt", [(2, 4, 3), (11, 3, 2), (42, 3, 4), (40, 5, 100), (9, 1, 3)])
def test_bptt_segments_cover_every_target_once_with_history(length, batch_size, bptt):
    ids = torch.arange(length)
    segments = list(bptt_segments(ids, batch_size, bptt))
    rows = min(batch_size, length - 1)
    columns = (length - 1) // rows
    # Rebuild each row by concatenating its segments; leftover (1-row) segments extend the last row.
    row_inputs = [[] for _ in range(rows)]
    row_targets = [[] for _ in range(rows)]
    for inputs, targets in segments:
        assert inputs.shape == targets.shape and inputs.shape[1] <= bptt
        assert torch.equal(targets, inputs + 1)  # ids = arange: each target follows its input
        first = rows - inputs.shape[0]
        assert first in (0, rows - 1)
        for r in range(inputs.shape[0]):
            row_inputs[first + r] += inputs[r].tolist()
            row_targets[first + r] += targets[r].tolist()
    flat = [t for row in row_targets for t in row]
    assert flat == list(range(1, length))
    for r in range(rows - 1):
        assert len(row_targets[r]) == columns


def test_rebatch_regroups_in_order():
    chunks = [
        (torch.arange(0, 3), -torch.arange(0, 3)),
        (torch.arange(3, 3),) * 2,
        (torch.arange(3, 11), -torch.arange(3, 11)),
    ]
    batches = list(rebatch(iter(chunks), 4))
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert all(torch.equal(a, -b) for a, b in batches)


def test_keep_prob_matches_word2vec_formula():
    counts = [1000, 100, 10, 1, 0]
    sample = 0.01
    threshold = sample * sum(counts)
    expected = []
    for f in counts:
        keep = 1.0 if f == 0 else (math.sqrt(f / threshold) + 1) * threshold / f
        expected.append(min(keep, 1.0))
    assert expected[0] < 0.5 and expected[2] == 1.0  # the test covers both regimes
    assert subsample_keep_prob(counts, sample).tolist() == pytest.approx(expected, rel=1e-12)
    assert subsample_keep_prob(counts, 0.0).tolist() == [1.0] * 5


@pytest.mark.parametrize("counts, sample", [([3, -1], 0.1), ([[1, 2]], 0.1), ([3, 1], 1.0), ([3, 1], -0.1)])
def test_keep_prob_rejects_bad_input(counts, sample):
    with pytest.raises(ConfigError):
        subsample_keep_prob(counts, sample)


def test_subsample_keeps_each_token_with_its_probability():
    keep_prob = torch.tensor([0.3, 1.0], dtype=torch.float64)
    n = 20_000
    ids = torch.cat([torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long)])
    kept = subsample(ids, keep_prob, torch.Generator().manual_seed(0))
    assert (kept == 1).sum().item() == n
    # The kept count of word 0 is Binomial(n, 0.3): allow 5 standard deviations.
    sd = math.sqrt(n * 0.3 * 0.7)
    assert abs((kept == 0).sum().item() - 0.3 * n) < 5 * sd


def test_shrunk_windows_weight_offsets_by_distance():
    # Each interior centre draws b ~ U{1..W} and uses offset ±d iff b >= d, so the count of
    # offset d on one side over N centres is Binomial(N, (W - d + 1) / W). 5 sd bounds each.
    window, length = 4, 6000
    ids = torch.arange(length)
    offsets = torch.tensor([-4, -3, -2, -1, 1, 2, 3, 4])
    positions = torch.arange(window, length - window)
    radius = shrunk_radius(positions.numel(), window, torch.Generator().manual_seed(1), torch.device("cpu"))
    assert radius.min() == 1 and radius.max() == window
    _, inside = windows_at(ids, positions, offsets, 0)
    used = context_mask(inside, offsets, radius)
    n = positions.numel()
    for j, d in enumerate(offsets.tolist()):
        p = (window - abs(d) + 1) / window
        assert abs(used[:, j].sum().item() - n * p) < 5 * math.sqrt(n * p * (1 - p) + 1e-12), d
