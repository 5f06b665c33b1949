"""``bigvocab bench --distributed P``: each row's training step on one process and split over P.

For each V and each selected row, the same workload (hidden states, targets, seed) is stepped
(loss, backward, SGD) once by one ordinary process and once by P local processes holding the
layer vocabulary-parallel (:func:`bigvocab.outputs.parallel.vocab_parallel`, gloo on CPU, NCCL with
``--device cuda``: rank r on ``cuda:r``). Per rank it reports

* ``param_mib`` -- the layer's parameters and buffers held by the rank;
* ``peak_step_mib`` -- the step's working memory above what was resident before it (measured as
  in :mod:`bigvocab.bench.suites.memory`: VmHWM on CPU, in a child started with a low mmap threshold;
  ``max_memory_allocated`` on CUDA);
* ``layer_peak_mib`` -- their sum, the layer's memory at the peak of its step;
* ``step_seconds`` -- the median of a few timed steps after the measured one.

The one-process and P-process runs are two child processes run one after the other, so they do
not compete for cores or memory. Rows that cannot be split (``dsoftmax``, ``cnn``, ``char``) keep
the error.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.harness.selection import candidate_by_label, select_candidates
from bigvocab.bench.harness.side_data import build_layer, synthetic_side_data
from bigvocab.bench.suites.memory import MIB, memory_spec, step_peak_bytes
from bigvocab.errors import ConfigError
from bigvocab.outputs.parallel import vocab_parallel

#: Timed steps after the measured one (their median is reported).
TIMED_STEPS = 2


def _layer_bytes(layer: torch.nn.Module) -> int:
    tensors = list(layer.parameters()) + list(layer.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


def _rank_rows(rank: int, spec: dict, out_dir: str) -> None:
    """Every row of ``spec`` on this rank; results to ``out_dir/rank{rank}.json``."""
    torch.set_num_threads(spec["threads"])
    world_size = spec["world_size"]
    device = torch.device(spec["device"])
    if device.type == "cuda":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    group = None
    if world_size > 1:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method=f"file://{out_dir}/rendezvous", rank=rank, world_size=world_size)
        group = dist.group.WORLD
    side = synthetic_side_data(spec["vocab_size"], seed=spec["seed"])
    rows = []
    for label in spec["labels"]:
        row: dict = {"label": label, "processes": world_size, "rank": rank}
        try:
            torch.manual_seed(spec["seed"])  # the same weights and draws on every rank
            workload = make_workload(side.counts, spec["hidden"], spec["batch"], 1, seed=spec["seed"], device=device)
            layer, _ = build_layer(
                candidate_by_label(label), spec["hidden"], spec["vocab_size"], side, num_samples=spec["num_samples"]
            )
            if group is not None:
                layer = vocab_parallel(layer, group)
            layer = layer.to(device)
            row["param_mib"] = _layer_bytes(layer) / MIB
            row["peak_step_mib"] = step_peak_bytes(layer, workload, device) / MIB
            row["layer_peak_mib"] = row["param_mib"] + row["peak_step_mib"]
            optimizer = make_optimizer(layer)
            times = []
            for _ in range(TIMED_STEPS):
                start = time.perf_counter()
                training_step(layer, optimizer, workload)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                times.append(time.perf_counter() - start)
            row["step_seconds"] = statistics.median(times)
            del layer, workload, optimizer
        except Exception as error:  # a row that fails (or cannot be split) is reported, never dropped
            row["error"] = f"{type(error).__name__}: {error}"
        rows.append(row)
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(rows))
    if group is not None:
        dist.destroy_process_group()


def run_worker(spec: dict) -> list[dict]:
    """Run ``spec`` on ``spec["world_size"]`` local processes (in this process when 1)."""
    with tempfile.TemporaryDirectory() as out_dir:
        if spec["world_size"] == 1:
            _rank_rows(0, spec, out_dir)
        else:
            mp.spawn(_rank_rows, args=(spec, out_dir), nprocs=spec["world_size"], join=True)
        return [
            row
            for rank in range(spec["world_size"])
            for row in json.loads(Path(out_dir, f"rank{rank}.json").read_text())
        ]


def measure_distributed(spec: dict, world_size: int, *, timeout: float | None = None) -> list[dict]:
    """Rows of one process, then of ``world_size`` processes, each in a fresh child (so that CPU
    peak memory is measured as in :mod:`bigvocab.bench.suites.memory`)."""
    rows: list[dict] = []
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    for processes in (1, world_size):
        done = subprocess.run(
            [sys.executable, "-m", "bigvocab.bench.suites.distributed_worker"],
            input=json.dumps({**spec, "world_size": processes}),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
            rows.extend({"label": label, "processes": processes, "rank": -1, "error": tail} for label in spec["labels"])
            continue
        rows.extend(json.loads(line) for line in done.stdout.splitlines() if line.startswith("{"))
    return rows


def ratio_rows(rows: list[dict]) -> list[dict]:
    """Per label: the one-process figures, the worst rank's figures and their ratios."""
    out = []
    for label in dict.fromkeys(row["label"] for row in rows):
        single = [r for r in rows if r["label"] == label and r["processes"] == 1]
        split = [r for r in rows if r["label"] == label and r["processes"] > 1]
        entry: dict = {"label": label}
        errors = [r["error"] for r in single + split if "error" in r]
        if errors or not single or not split:
            entry["error"] = errors[0] if errors else "not measured"
            out.append(entry)
            continue
        entry["processes"] = split[0]["processes"]
        for key in ("param_mib", "peak_step_mib", "layer_peak_mib", "step_seconds"):
            entry[f"one_{key}"] = single[0][key]
            entry[f"max_rank_{key}"] = max(r[key] for r in split)
            entry[f"{key}_ratio"] = entry[f"max_rank_{key}"] / single[0][key] if single[0][key] else float("nan")
        out.append(entry)
    return out


def distributed_table(vocab_size: int, entries: list[dict]) -> str:
    """A markdown table of :func:`ratio_rows` at one V."""
    lines = [
        f"V = {vocab_size}: one process vs the largest of P ranks (MiB; s per step)",
        "",
        "| row | P | params 1 -> P | step peak 1 -> P | params+step 1 -> P (ratio) | s/step 1 -> P |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        if "error" in e:
            lines.append(f"| {e['label']} | | {e['error']} | | | |")
            continue
        lines.append(
            f"| {e['label']} | {e['processes']} "
            f"| {e['one_param_mib']:.0f} -> {e['max_rank_param_mib']:.0f} "
            f"| {e['one_peak_step_mib']:.0f} -> {e['max_rank_peak_step_mib']:.0f} ({e['peak_step_mib_ratio']:.2f}x) "
            f"| {e['one_layer_peak_mib']:.0f} -> {e['max_rank_layer_peak_mib']:.0f} ({e['layer_peak_mib_ratio']:.2f}x) "
            f"| {e['one_step_seconds']:.2f} -> {e['max_rank_step_seconds']:.2f} |"
        )
    return "\n".join(lines)


def run_distributed_bench(config: BenchConfig, world_size: int, *, stream: TextIO | None = None) -> list[Path]:
    """``bench --distributed P``: every selected row at every V of ``config``, printed as it goes;
    writes ``distributed.json`` and ``distributed.md`` under ``config.out``."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 2:
        raise ConfigError(f"--distributed needs at least 2 processes, got {world_size!r}")
    if config.out is None:
        raise ConfigError(
            "--distributed writes distributed.json and distributed.md under out: give it a folder (--out DIR)"
        )
    candidates = [c for c in select_candidates(config.outputs) if c.kind == "layer"]
    results, tables = [], []
    for vocab_size in config.vocab_sizes:
        spec = memory_spec(config, candidates, vocab_size)
        rows = measure_distributed(spec, world_size)
        entries = ratio_rows(rows)
        results.append(
            {"vocab_size": vocab_size, "hidden": config.hidden, "batch": config.batch, "rows": rows, "summary": entries}
        )
        tables.append(distributed_table(vocab_size, entries))
        if stream is not None:
            print(tables[-1] + "\n", file=stream, flush=True)
    out_dir = Path(config.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "distributed.json", out_dir / "distributed.md"
    json_path.write_text(json.dumps(results, indent=1))
    md_path.write_text("\n\n".join(tables) + "\n")
    return [json_path, md_path]
