"""``bench --distributed``: the side-by-side table and the checks of its option (the measurement
itself is a child process per layout; results/distributed-memory holds a run)."""

from __future__ import annotations

import pytest

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.suites.distributed import distributed_table, ratio_rows, run_distributed_bench
from bigvocab.errors import ConfigError

pytestmark = pytest.mark.slow


def row(label, processes, rank, params, step, seconds):
    return {
        "label": label,
        "processes": processes,
        "rank": rank,
        "param_mib": params,
        "peak_step_mib": step,
        "layer_peak_mib": params + step,
        "step_seconds": seconds,
    }


def test_ratios_take_the_largest_rank_against_one_process():
    rows = [
        row("full", 1, 0, 100.0, 100.0, 1.0),
        row("full", 2, 0, 50.0, 60.0, 0.6),
        row("full", 2, 1, 50.0, 56.0, 0.7),
        {"label": "dsoftmax", "processes": 2, "rank": 0, "error": "ConfigError: DifferentiatedSoftmax cannot be made"},
    ]
    full, dsoftmax = ratio_rows(rows)
    assert full["max_rank_layer_peak_mib"] == 110.0 and full["layer_peak_mib_ratio"] == pytest.approx(0.55)
    assert full["peak_step_mib_ratio"] == pytest.approx(0.6) and full["max_rank_step_seconds"] == 0.7
    assert dsoftmax["error"].startswith("ConfigError")
    table = distributed_table(1000, [full, dsoftmax])
    assert "| full | 2 | 100 -> 50 | 100 -> 60 (0.60x) | 200 -> 110 (0.55x) | 1.00 -> 0.70 |" in table
    assert "| dsoftmax | | ConfigError: DifferentiatedSoftmax cannot be made" in table


@pytest.mark.parametrize("processes", [1, 0, True])
def test_distributed_needs_two_processes(processes, tmp_path):
    with pytest.raises(ConfigError, match="--distributed needs at least 2 processes"):
        run_distributed_bench(BenchConfig.quick(out=tmp_path), processes)


def test_distributed_without_an_out_folder_is_refused_up_front():
    with pytest.raises(ConfigError, match="under out: give it a folder"):
        run_distributed_bench(BenchConfig.quick(out=None, vocab_sizes=()), 2)
