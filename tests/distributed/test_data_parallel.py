"""Data parallelism under gloo on 2 and 3 CPU processes: averaged (dense and sparse) gradients
make P ranks with N rows each step exactly as one process with P N rows."""

from __future__ import annotations

import pytest
import torch.distributed as dist
from data_parallel_checks import all_checks
from distributed_harness import ranks_once

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]


@pytest.fixture(params=(2, 3), ids=lambda p: f"P{p}")
def ranks(request, tmp_path_factory) -> list[dict]:
    """Every rank's check results for P processes."""
    return ranks_once(request.param, all_checks, tmp_path_factory)


@pytest.mark.parametrize("check", ["full", "sampled"])
def test_data_parallel_steps_as_one_process_on_the_global_batch(ranks, check):
    for result in ranks:
        assert result[f"{check}/loss_moved"] > 1e-3
        assert result[f"{check}/losses"] <= 1e-10
        assert result[f"{check}/weights"] <= 1e-10


def test_gradients_missing_on_some_ranks_are_averaged_as_zeros(ranks):
    world = len(ranks)
    for result in ranks:
        assert result["uneven/dense"] <= 1e-15
        assert result["uneven/sparse"] <= 1e-15
        assert result["uneven/sparse_rows"] == len({1, 4} | {r % 6 for r in range(1, world)})


def test_batches_dealt_round_robin_without_a_ragged_tail(ranks):
    world = len(ranks)
    for rank, result in enumerate(ranks):
        assert result["shard_batches"] == [rank, world + rank]
