"""Local SGD and elastic averaging SGD on 2 gloo processes: each against its update rule on a
small problem, and through the Trainer, stopped and resumed, with a one-process checkpoint."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from averaging_checks import ALPHA, LR, PERIOD, STEPS, initial_weight, rank_data, trainer_runs, update_rule_run
from distributed_harness import run_ranks

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]

WORLD = 2


def sgd_step(weight: torch.Tensor, rank: int, step: int) -> torch.Tensor:
    x, y = rank_data(rank, step)
    weight = weight.clone().requires_grad_(True)
    (x @ weight - y).square().mean().backward()
    return (weight - LR * weight.grad).detach()


def expected(method: str) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The ranks' weights and the consensus after STEPS steps, by the method's rule."""
    weights = [initial_weight() for _ in range(WORLD)]
    centre = initial_weight()
    for step in range(1, STEPS + 1):
        weights = [sgd_step(w, rank, step) for rank, w in enumerate(weights)]
        if step % PERIOD:
            continue
        if method == "local-sgd":
            mean = sum(weights) / WORLD
            weights = [mean.clone() for _ in weights]
        else:  # Zhang et al. 2015, eq. 5-6: x_i -= α (x_i - x̃); x̃ += α Σ_j (x_j - x̃)
            differences = [w - centre for w in weights]
            weights = [w - ALPHA * d for w, d in zip(weights, differences)]
            centre = centre + ALPHA * sum(differences)
    consensus = sum(weights) / WORLD if method == "local-sgd" else centre
    return weights, consensus


@pytest.mark.parametrize("method", ["local-sgd", "easgd"])
def test_each_method_follows_its_update_rule(method, tmp_path):
    results = run_ranks(WORLD, update_rule_run, tmp_path, method=method)
    weights, consensus = expected(method)
    for rank, result in enumerate(results):
        assert torch.allclose(torch.tensor(result["weight"], dtype=torch.float64), weights[rank], atol=1e-12)
        assert torch.allclose(torch.tensor(result["consensus"], dtype=torch.float64), consensus, atol=1e-12)
    # the method differs from plain data parallelism: the ranks' own weights are not all equal
    if method == "easgd":
        assert not torch.allclose(weights[0], weights[1])


_cache: dict[str, dict] = {}


@pytest.fixture
def runs(tmp_path_factory) -> dict:
    if "results" not in _cache:
        out = tmp_path_factory.mktemp("averaging")
        _cache["results"] = run_ranks(WORLD, trainer_runs, out / "spawn", runs=str(out))
    return _cache["results"]


@pytest.mark.parametrize("method", ["local-sgd", "easgd"])
def test_a_resumed_run_continues_every_rank_exactly(runs, method):
    for rank_result in runs:
        assert rank_result[f"{method}/resumed_equal"]
    # validation measures the consensus, the same on every rank (so every rank stops alike)
    assert runs[0][f"{method}/history"] == runs[1][f"{method}/history"]
    assert runs[0][f"{method}/ranks_saved"] == WORLD
