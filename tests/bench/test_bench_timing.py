"""Paired-ratio statistics on synthetic timings, and the timing helpers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigvocab.bench.harness import formatting as fmt
from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.timing import inner_loop_size, paired_speedup, paired_timings
from bigvocab.bench.suites.speed import WARMUP_BELOW_SECONDS, Prepared, repeats_within, time_operations, timing_seconds
from bigvocab.errors import ConfigError


def test_pairing_cancels_a_drift_that_unpaired_medians_do_not():
    # The machine slows down 5x over the run; within each repetition the layer is exactly 4x
    # faster than full, so every paired ratio is 4 whatever the drift.
    drift = np.linspace(1.0, 5.0, 9)
    full = 0.8 * drift
    layer = 0.2 * drift
    summary = paired_speedup(full.tolist(), layer.tolist())
    assert summary.median == pytest.approx(4.0)
    assert summary.q1 == pytest.approx(4.0) and summary.q3 == pytest.approx(4.0)
    assert summary.min == pytest.approx(4.0) and summary.max == pytest.approx(4.0)
    assert summary.repeats == 9


def test_median_quartiles_and_extremes_of_the_ratios():
    full = [1.0, 2.0, 3.0, 4.0, 10.0]
    layer = [1.0, 1.0, 1.0, 1.0, 1.0]
    summary = paired_speedup(full, layer)
    assert summary.median == 3.0
    assert (summary.q1, summary.q3) == (2.0, 4.0)  # numpy's linear interpolation, by hand
    assert (summary.min, summary.max) == (1.0, 10.0)
    assert summary.reference_seconds == 3.0 and summary.candidate_seconds == 1.0


def test_a_slower_candidate_has_a_ratio_below_one():
    assert paired_speedup([1.0, 1.0], [2.0, 4.0]).median == pytest.approx(0.375)


@pytest.mark.parametrize("full, layer", [([], []), ([1.0], [1.0, 2.0]), ([1.0], [0.0]), ([-1.0], [1.0])])
def test_bad_timings_are_refused(full, layer):
    with pytest.raises(ConfigError):
        paired_speedup(full, layer)


def test_inner_loop_size():
    assert inner_loop_size(0.5, 0.02) == 1
    assert inner_loop_size(0.001, 0.02) == 20
    assert inner_loop_size(0.0, 0.02) == 1000
    assert inner_loop_size(1e-9, 0.02, max_inner=50) == 50


@pytest.mark.parametrize(
    "candidate_warmup, expected",
    [
        (False, "rrccc" + "cccrr" + "rrccc"),
        # A warm-up call precedes each of the candidate's timings, never the reference's.
        (True, "rr" + "cccc" + "cccc" + "rr" + "rr" + "cccc"),
    ],
)
def test_paired_timings_alternate_order_and_count_calls(candidate_warmup, expected):
    calls: list[str] = []
    ref, cand = paired_timings(
        lambda: calls.append("r"),
        lambda: calls.append("c"),
        reference_inner=2,
        candidate_inner=3,
        repeats=3,
        device=torch.device("cpu"),
        candidate_warmup=candidate_warmup,
    )
    assert len(ref) == len(cand) == 3
    assert "".join(calls) == expected
    assert all(t > 0 for t in ref + cand)


def test_short_calls_are_warmed_up_before_each_timing_long_ones_are_not():
    calls = {"full": 0, "layer": 0}

    def counting(name):
        return lambda: calls.__setitem__(name, calls[name] + 1)

    # Call seconds as prepare() measured them; the closures themselves take no time.
    long_call = WARMUP_BELOW_SECONDS * 1.5
    reference = Prepared(None, {"train": counting("full")}, {"train": long_call}, {"train": 1}, None)
    short = Prepared(None, {"train": counting("layer")}, {"train": 0.01}, {"train": 2}, None)
    config = BenchConfig.quick(op_budget_seconds=100.0, repeats=3)
    assert time_operations(reference, short, config, torch.device("cpu"))["train"].repeats == 3
    assert calls == {"full": 3, "layer": 3 * (1 + 2)}
    assert timing_seconds(0.01, 0.02) == pytest.approx(0.03)
    assert timing_seconds(long_call, 0.02) == long_call


def test_slow_operations_get_fewer_repetitions_but_at_least_one():
    assert repeats_within(4.0, 0.5, 3) == 3
    assert repeats_within(4.0, 1.5, 3) == 2
    assert repeats_within(4.0, 10.0, 3) == 1
    assert repeats_within(4.0, 0.0, 3) == 3


def test_an_operation_slower_than_the_budget_is_timed_once_unpaired():
    calls = {"full": 0, "layer": 0}

    def counting(name):
        return lambda: calls.__setitem__(name, calls[name] + 1)

    reference = Prepared(None, {"train": counting("full")}, {"train": 0.01}, {"train": 1}, None)
    slow = Prepared(None, {"train": counting("layer")}, {"train": 10.0}, {"train": 1}, None)
    config = BenchConfig.quick(op_budget_seconds=4.0, repeats=3)
    train = time_operations(reference, slow, config, torch.device("cpu"))["train"]
    assert train.repeats == 0
    assert calls == {"full": 1, "layer": 0}  # the layer's warm-up call is its timing
    assert train.seconds == 10.0
    assert train.speedup == train.full_seconds / 10.0
    assert fmt.speedup_spread(train).endswith("(1 call)")


def test_a_single_pair_is_marked_rather_than_given_a_range_of_one_ratio():
    """A pair of full's 17 s step at V = 1M and a layer's exceeds a 4 s budget: one repetition,
    whose "IQR" would read [1582–1582]."""
    reference = Prepared(None, {"train": lambda: None}, {"train": 3.0}, {"train": 1}, None)
    layer = Prepared(None, {"train": lambda: None}, {"train": 0.002}, {"train": 1}, None)
    config = BenchConfig.quick(op_budget_seconds=4.0, repeats=3)
    train = time_operations(reference, layer, config, torch.device("cpu"))["train"]
    assert train.repeats == 1
    assert fmt.speedup_spread(train).endswith("(1 pair)") and "[" not in fmt.speedup_spread(train)
