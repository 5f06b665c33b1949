"""``adaptive`` and ``hsm`` vocabulary-parallel under gloo on 2 and 3 CPU processes, held against
the one-process layer with the same weights (see structured_checks.py for what is run)."""

from __future__ import annotations

import pytest
import torch.distributed as dist
from distributed_harness import ranks_once
from structured_checks import F32_CHECKS, STRUCTURED, vocab_parallel_checks

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]

TOLERANCE = {"f64": 1e-10, "f32": 1e-5}


@pytest.fixture(params=(2, 3), ids=lambda p: f"P{p}")
def ranks(request, tmp_path_factory) -> list[dict]:
    """Every rank's check results for P processes."""
    return ranks_once(request.param, vocab_parallel_checks, tmp_path_factory)


@pytest.mark.parametrize(
    "check, tag", [(check, "f64") for check, *_ in STRUCTURED] + [(check, "f32") for check in F32_CHECKS]
)
def test_values_gradients_and_topk_match_one_process(ranks, check, tag):
    keys = [key for key in ranks[0] if key.startswith(f"{tag}/{check}/")]
    assert len(keys) == 3 * 3 + 3 * 2 + 1
    for result in ranks:
        for key in keys:
            if key.endswith("_ids_differ"):
                assert result[key] == 0, key
            else:
                assert result[key] <= TOLERANCE[tag], (key, result[key])


@pytest.mark.parametrize("check", [check for check, *_ in STRUCTURED])
def test_sgd_run_and_checkpoint_round_trip(ranks, check):
    for result in ranks:
        prefix = f"train/{check}"
        assert result[f"{prefix}/loss_moved"] > 1e-3  # the run really trained
        for what in ("losses", "weights", "single_loads_gathered", "scatter_error"):
            assert result[f"{prefix}/{what}"] <= 1e-10, what
        assert result[f"{prefix}/gather_keys_equal"]
        assert result[f"{prefix}/gather_root_is_none_elsewhere"]
        assert result[f"{prefix}/other_layout"].startswith("CheckpointError: this checkpoint shard was written by")
        assert "resume with the same number of processes" in result[f"{prefix}/other_layout"]


@pytest.mark.parametrize(
    "case, message",
    [
        ("adaptive_partition", "ConfigError: adaptive splits every cluster evenly"),
        ("adaptive_small_cluster", "ConfigError: adaptive's cluster 1: cannot split 1 classes over"),
        ("hsm_twice", "ConfigError: this layer is already vocabulary-parallel"),
    ],
)
def test_bad_setups_raise_one_clear_error(ranks, case, message):
    for result in ranks:
        assert result[f"bad/{case}"].startswith(message), result[f"bad/{case}"]
