"""The measuring API drivers use (``bigvocab.bench.bench_layer`` and the bench's step): the same
layer and workload as the speed suite builds for a row, and a step that trains it."""

from __future__ import annotations

import pytest
import torch

from bigvocab.bench import BenchConfig, bench_layer, make_optimizer, training_step
from bigvocab.bench.harness.selection import candidate_by_label
from bigvocab.bench.harness.side_data import build_layer, synthetic_side_data
from bigvocab.errors import ConfigError

V = 300
CONFIG = BenchConfig.quick(hidden=8, batch=16, max_eval_elements=5 * V, seed=3)


@pytest.mark.parametrize("label", ["full", "hsm[balanced]", "neg[shared]", "torch-linear"])
def test_the_layer_is_the_one_the_speed_suite_builds_for_the_row(label):
    layer, _ = bench_layer(label, V, CONFIG)
    torch.manual_seed(CONFIG.seed)
    side = synthetic_side_data(V, seed=CONFIG.seed)
    expected, _ = build_layer(candidate_by_label(label), CONFIG.hidden, V, side, num_samples=None)
    assert type(layer) is type(expected)
    ours, theirs = layer.state_dict(), expected.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[key], theirs[key]) for key in ours)


def test_a_variant_label_builds_its_variant():
    layer, _ = bench_layer("neg[shared]", V, CONFIG)
    assert layer.shared


def test_the_workload_follows_the_config():
    _, workload = bench_layer("full", V, CONFIG)
    assert workload.hidden.shape == (CONFIG.batch, CONFIG.hidden) and workload.hidden.requires_grad
    assert workload.target.shape == (CONFIG.batch,) and int(workload.target.max()) < V
    assert workload.eval_hidden.shape == (5, CONFIG.hidden)  # N' x V capped at 5 V floats


def test_a_training_step_moves_the_layer_and_reaches_the_hidden_states():
    layer, workload = bench_layer("sampled", V, CONFIG)
    before = [p.detach().clone() for p in layer.parameters()]
    training_step(layer, make_optimizer(layer), workload)
    assert workload.hidden.grad is not None and torch.isfinite(workload.hidden.grad).all()
    assert any(not torch.equal(old, new.detach()) for old, new in zip(before, layer.parameters()))


def test_an_unknown_row_names_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'hsm\\[balanced\\]'"):
        bench_layer("hsm[balanced", V, CONFIG)
