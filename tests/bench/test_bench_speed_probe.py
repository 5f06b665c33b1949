"""The speed bench probes evaluation operations on one row and skips those too slow to time."""

from __future__ import annotations

import torch

import bigvocab
from bigvocab.bench.harness import formatting
from bigvocab.bench.harness.operations import make_workload
from bigvocab.bench.harness.rows import SpeedRow
from bigvocab.bench.suites.speed import prepare, probe_seconds_per_row


def tiny():
    torch.manual_seed(0)
    layer = bigvocab.create_output("full", 8, 50)
    workload = make_workload([50 - i for i in range(50)], 8, 16, 4, seed=0, device=torch.device("cpu"))
    return layer, workload


def test_an_operation_predicted_too_slow_is_skipped_not_timed():
    layer, workload = tiny()
    prepared, errors, skipped = prepare(layer, workload, torch.device("cpu"), 1e-3, max_call_seconds=0.0)
    assert errors == [] and set(prepared.inner) == {"train"}
    assert [note.split(" skipped (too slow: ")[0] for note in skipped] == ["log_softmax", "topk"]
    assert all(note.endswith(" s/row)") for note in skipped)


def test_fast_operations_are_probed_and_timed():
    layer, workload = tiny()
    assert probe_seconds_per_row(layer, "log_softmax", None, workload, 60.0) < 1.0
    prepared, errors, skipped = prepare(layer, workload, torch.device("cpu"), 1e-3)
    assert errors == [] and skipped == [] and set(prepared.inner) == {"train", "log_softmax", "topk"}


def test_a_skip_reads_as_a_note_on_an_ok_row():
    row = SpeedRow(
        approach="char",
        method="char",
        kind="",
        vocab_size=10**6,
        hidden=8,
        batch=1,
        eval_rows=1,
        error="log_softmax skipped (too slow: 9.1 s/row)",
    )
    assert formatting.speed_line(row).endswith("ok; log_softmax skipped (too slow: 9.1 s/row)")
