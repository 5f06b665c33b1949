"""Vocabulary-parallel output layers under gloo on 2 and 3 CPU processes, each held against the
one-process layer with the same weights and draws (see distributed_checks.py for what is run)."""

from __future__ import annotations

import pytest
import torch.distributed as dist
from distributed_checks import OBJECTIVES, H
from distributed_harness import ranks_once
from structured_checks import vocab_parallel_checks

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]

WORLD_SIZES = (2, 3)
TOLERANCE = {"f64": 1e-10, "f32": 1e-5}
#: The class ranges of VocabPartition.even(13, P): sizes differ by at most one.
BOUNDS = {2: [0, 7, 13], 3: [0, 5, 9, 13]}


@pytest.fixture(params=WORLD_SIZES, ids=lambda p: f"P{p}")
def ranks(request, tmp_path_factory) -> list[dict]:
    """Every rank's check results for P processes."""
    return ranks_once(request.param, vocab_parallel_checks, tmp_path_factory)


def values(ranks: list[dict], key: str) -> list:
    return [result[key] for result in ranks]


@pytest.mark.parametrize("tag", ["f64", "f32"])
def test_exact_evaluation_matches_one_process(ranks, tag):
    for key in [k for k in ranks[0] if k.startswith(f"{tag}/exact/")]:
        for value in values(ranks, key):
            if key.endswith("_ids_differ"):
                assert value == 0, key
            else:
                assert value <= TOLERANCE[tag], key


@pytest.mark.parametrize("check", [check for check, _, _ in OBJECTIVES])
def test_objective_and_gradients_match_one_process(ranks, check):
    tags = ["f64", "f32"] if any(k.startswith(f"f32/objective/{check}/") for k in ranks[0]) else ["f64"]
    for tag in tags:
        for what in ("loss", "grad_hidden", "grad_params"):
            key = f"{tag}/objective/{check}/{what}"
            assert max(values(ranks, key)) <= TOLERANCE[tag], key


@pytest.mark.parametrize("check", ["full", "sampled"])
def test_sgd_run_matches_one_process(ranks, check):
    prefix = f"f64/training/{check}"
    assert min(values(ranks, f"{prefix}/loss_moved")) > 1e-3  # the run really trained
    assert max(values(ranks, f"{prefix}/losses")) <= 1e-10
    assert max(values(ranks, f"{prefix}/weights")) <= 1e-10


def test_checkpoint_gathers_and_shards(ranks):
    for result in ranks:
        assert result["checkpoint/gather_root_is_none_elsewhere"]
        assert result["checkpoint/gather_keys_equal"]
        assert result["checkpoint/single_loads_gathered"]
        assert result["checkpoint/gather_error"] == 0
        assert result["checkpoint/scatter_error"] == 0
        assert result["checkpoint/other_layout"].startswith(
            "CheckpointError: this checkpoint shard was written by rank 0 of 2"
        )
        assert "resume with the same number of processes" in result["checkpoint/other_layout"]
        assert result["checkpoint/wrong_rows"].startswith("CheckpointError: 1.scorer.weight has 12 rows")


def test_scorer_built_sharded_holds_only_its_rows(ranks):
    sizes = [stop - start for start, stop in zip(BOUNDS[len(ranks)], BOUNDS[len(ranks)][1:])]
    for result, size in zip(ranks, sizes):
        assert result["built/rows"] == [size, H]
        assert result["built/streams_in_step"]  # a sampler draws the same ids on every rank
        assert result["built/rows_differ"] and result["built/in_bound"]
        assert result["built/loss"] <= 1e-10
        assert result["built/keyword"] == 0  # create_output(..., vocab_parallel=group) splits alike


@pytest.mark.parametrize(
    "case, message",
    [
        (
            "structured_layer",
            "ConfigError: DifferentiatedSoftmax cannot be made vocabulary-parallel: its frequency bands",
        ),
        ("computed_rows", "ConfigError: SampledSoftmax over the 'cnn' scorer cannot be made vocabulary-parallel"),
        ("no_group", "ConfigError: group must be a torch.distributed process group"),
        ("partition_world", "ConfigError: the partition has"),
        ("partition_classes", "ConfigError: the partition covers 14 classes but the layer has 13"),
        ("more_ranks_than_classes", "ConfigError: cannot split"),
        ("tie", "ConfigError: a vocabulary-parallel output layer cannot tie"),
        ("twice", "ConfigError: this layer is already vocabulary-parallel"),
    ],
)
def test_bad_setups_raise_one_clear_error(ranks, case, message):
    for value in values(ranks, f"bad/{case}"):
        assert value.startswith(message), value
