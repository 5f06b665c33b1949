"""Peak memory of one training step, per layer.

What is measured: the growth of memory during the first training step (loss, backward, SGD
update) above what was held just before it (parameters, inputs, everything built so far) -- i.e. the step's working
memory: logits or their chunks, activations kept for backward, gradients. Parameters are
reported separately (``param_mib``).

* CPU: :mod:`tracemalloc` does not see torch's allocations, so the resident set is read from
  ``/proc/self/status``: the peak (VmHWM) is reset by writing ``5`` to ``/proc/self/clear_refs``
  (Linux >= 4.0) just before the step and read after it; minus VmRSS before the step. This runs
  in a child process started with ``MALLOC_MMAP_THRESHOLD_`` = 64 KiB, so every large block is
  its own mapping, returned to the system when freed: one layer's freed buffers cannot hide the
  next layer's allocations, and the timings in the parent keep the usual allocator.
* CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, in process.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import torch

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.harness.selection import candidate_by_label
from bigvocab.bench.harness.side_data import build_layer, synthetic_side_data

MIB = float(1 << 20)
_STATUS = "/proc/self/status"


def _status_kib(field: str) -> int:
    with open(_STATUS) as handle:
        match = re.search(rf"^{field}:\s+(\d+) kB", handle.read(), re.MULTILINE)
    if match is None:
        raise OSError(f"{_STATUS} has no {field} line")
    return int(match.group(1))


def _reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def step_peak_bytes(layer, workload, device: torch.device) -> int:
    """Bytes the layer's first training step needs above what is resident before it. The first
    step, so that each layer costs one step here: it includes lazily built state (sampler
    tables), which a later step would not allocate again -- a small, conservative excess."""
    optimizer = make_optimizer(layer)
    layer.train()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        training_step(layer, optimizer, workload)
        torch.cuda.synchronize(device)
        return max(0, torch.cuda.max_memory_allocated(device) - before)
    before = _status_kib("VmRSS")
    _reset_peak_rss()
    training_step(layer, optimizer, workload)
    return max(0, _status_kib("VmHWM") - before) * 1024


def measure_rows(spec: dict) -> Iterator[dict]:
    """``{"label", "peak_step_mib" | "memory_error"}`` for each of ``spec["labels"]`` at one V.

    ``spec``: labels, vocab_size, hidden, batch, seed, num_samples, device, threads.
    """
    device = torch.device(spec["device"])
    torch.set_num_threads(spec["threads"])
    # Start the thread pool before the first measurement, so that no row pays for its stacks.
    torch.ones(256, 256, device=device) @ torch.ones(256, 256, device=device)
    if device.type == "cpu":
        _load_pair_kernels()
    side = synthetic_side_data(spec["vocab_size"], seed=spec["seed"])
    for label in spec["labels"]:
        result: dict = {"label": label}
        try:
            torch.manual_seed(spec["seed"])
            workload = make_workload(side.counts, spec["hidden"], spec["batch"], 1, seed=spec["seed"], device=device)
            layer, _ = build_layer(
                candidate_by_label(label), spec["hidden"], spec["vocab_size"], side, num_samples=spec["num_samples"]
            )
            result["peak_step_mib"] = step_peak_bytes(layer.to(device), workload, device) / MIB
            del layer, workload
        except Exception as error:  # a failing layer is reported on its row, never dropped
            result["memory_error"] = f"{type(error).__name__}: {error}"
        gc.collect()
        yield result


def _load_pair_kernels() -> None:
    """Compile (or load from numba's cache) the pair kernels of the sampling and tree layers, forward
    and backward, so that the first row to use them is not charged the compiler's ~100 MiB."""
    from bigvocab.kernels.pairs import pair_dots

    hidden = torch.ones(1, 1, requires_grad=True)
    table = torch.ones(1, 1, requires_grad=True)
    pair_dots(hidden, table, torch.zeros(1, 1, dtype=torch.long)).sum().backward()


def memory_spec(config: BenchConfig, candidates, vocab_size: int) -> dict:
    """What a child process needs to build and step ``candidates`` at ``vocab_size`` (the memory
    worker; ``bench --distributed`` adds the number of processes)."""
    return {
        "labels": [c.label for c in candidates],
        "vocab_size": vocab_size,
        "hidden": config.hidden,
        "batch": config.batch,
        "seed": config.seed,
        "num_samples": config.num_samples,
        "device": config.device,
        "threads": torch.get_num_threads(),
    }


def measure_memory(spec: dict, *, timeout: float | None = None) -> dict[str, dict]:
    """label -> result of :func:`measure_rows`, in a fresh child process on CPU."""
    if torch.device(spec["device"]).type == "cuda":
        return {row["label"]: row for row in measure_rows(spec)}
    if not os.path.exists("/proc/self/clear_refs"):
        return _all_failed(spec, "peak memory needs Linux (/proc/self/clear_refs); not measured")
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bigvocab.bench.suites.memory_worker"],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return _all_failed(spec, f"memory worker took longer than {timeout:.0f} s")
    found = _parse_results(done.stdout)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        missing = _all_failed(spec, f"memory worker exited with {done.returncode}: {tail}")
        return {**missing, **found}
    return found


def _all_failed(spec: dict, reason: str) -> dict[str, dict]:
    return {label: {"label": label, "memory_error": reason} for label in spec["labels"]}


def _parse_results(stdout: str) -> dict[str, dict]:
    """The worker prints one JSON object per row as it finishes, so rows measured before a crash
    (a layer killed for memory) survive it."""
    found = {}
    for line in stdout.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "label" in row:
            found[row["label"]] = row
    return found
