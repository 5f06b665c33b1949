"""Peak step memory, measured in a child process from the resident set (Linux only)."""

from __future__ import annotations

import os

import pytest
import torch

from bigvocab.bench.suites.memory import measure_memory

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc/self/clear_refs")


def test_dense_peer_step_holds_at_least_its_logits_and_errors_are_rows():
    vocab, rows = 20_000, 64
    spec = {
        "labels": ["torch-linear", "no-such-row"],
        "vocab_size": vocab,
        "hidden": 16,
        "batch": rows,
        "seed": 0,
        "num_samples": 8,
        "device": "cpu",
        "threads": 1,
    }
    found = measure_memory(spec, timeout=120)
    # F.cross_entropy keeps the (N, V) float32 logits' log-softmax for backward and builds its
    # gradient: at least N x V x 4 bytes beyond what was resident before the step.
    logits_mib = rows * vocab * 4 / 2**20
    assert found["torch-linear"]["peak_step_mib"] >= logits_mib
    # ... and not wildly more than logits, softmax, their gradients and the weight gradient.
    assert found["torch-linear"]["peak_step_mib"] < 6 * logits_mib + 20
    assert "unknown benchmark row 'no-such-row'" in found["no-such-row"]["memory_error"]


def test_the_first_row_on_the_compiled_pair_kernels_is_not_charged_for_the_compiler():
    # A small tree step moves well under a MiB; numba's compiler, loaded on first use, is ~100 MiB.
    spec = {
        "labels": ["hsm[balanced]"],
        "vocab_size": 2000,
        "hidden": 16,
        "batch": 64,
        "seed": 0,
        "num_samples": 8,
        "device": "cpu",
        "threads": 1,
    }
    assert measure_memory(spec, timeout=120)["hsm[balanced]"]["peak_step_mib"] < 20


def test_cuda_is_measured_in_process_when_there_is_one():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = {
        "labels": ["full"],
        "vocab_size": 1000,
        "hidden": 16,
        "batch": 32,
        "seed": 0,
        "num_samples": 8,
        "device": "cuda",
        "threads": 1,
    }
    assert measure_memory(spec)["full"]["peak_step_mib"] > 0
