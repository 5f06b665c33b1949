"""``Trainer`` under gloo on 2 processes, data parallel and vocabulary parallel, stopped and
resumed: per-step losses, tokens and the final one-process checkpoint match one ordinary process
(data parallel: with the P-times larger batch)."""

from __future__ import annotations

import signal

import pytest
import torch
import torch.distributed as dist
from distributed_harness import run_ranks
from training_checks import all_checks, leave_together, signal_on_one_rank

from bigvocab.distributed.training import DistributedTraining
from bigvocab.errors import ConfigError

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]

_cache: dict[str, dict] = {}


@pytest.fixture
def root(tmp_path_factory) -> dict:
    if "results" not in _cache:
        out = tmp_path_factory.mktemp("trainer")
        _cache["results"] = run_ranks(2, all_checks, out / "spawn", runs=str(out))[0]
    return _cache["results"]


@pytest.mark.parametrize("run", ["data_sampled", "vocab_full", "vocab_sampled", "vocab_hsm", "vocab_adaptive"])
def test_distributed_trainer_matches_one_process(root, run):
    assert root[f"{run}/num_losses"] == 4
    assert root[f"{run}/losses"] <= 1e-10
    assert root[f"{run}/same_keys"]  # the checkpoint is a one-process state dict
    assert root[f"{run}/weights"] <= 1e-10
    tokens, reference_tokens = root[f"{run}/tokens"]
    assert tokens == reference_tokens
    assert not root[f"{run}/stray_files"]


@pytest.mark.parametrize("layout", ["data", "vocab"])
def test_a_signal_on_one_rank_stops_every_rank_at_the_same_step(tmp_path, layout):
    if "signalled" not in _cache:
        _cache["signalled"] = run_ranks(2, signal_on_one_rank, tmp_path / "spawn", runs=str(tmp_path))
    ranks = _cache["signalled"]
    assert [rank[f"{layout}/stopped"] for rank in ranks] == [{"step": 2, "signal": int(signal.SIGTERM)}] * 2
    assert ranks[0][f"{layout}/saved_step"] == 2


def test_vocab_parallel_in_one_process_is_refused(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match="--vocab-parallel splits the output layer over the processes of a torchrun"):
        DistributedTraining.from_environment(vocab_parallel=True, device=torch.device("cpu"))
    assert DistributedTraining.from_environment(vocab_parallel=False, device=torch.device("cpu")) is None


def test_ranks_leave_the_group_together(tmp_path):
    assert run_ranks(2, leave_together, tmp_path) == [{"initialized": False}] * 2


def test_each_rank_takes_its_own_gpu(monkeypatch):
    """Under torchrun with --device cuda, rank r of a machine works on cuda:LOCAL_RANK (NCCL needs
    one card per process); checked without a GPU by recording the calls."""
    chosen, backends = [], []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", backends.append)
    DistributedTraining.from_environment(vocab_parallel=False, device=torch.device("cuda"))
    assert chosen == [1] and backends == ["nccl"]
    chosen.clear()
    DistributedTraining.from_environment(vocab_parallel=False, device=torch.device("cuda:0"))
    assert chosen == []  # a card named by the user stays theirs
