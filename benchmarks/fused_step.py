"""Sparse training steps with the optimiser fused into the backward: time, roofline, thread scaling.

For each bench row, the step as ``bigvocab train`` runs it (the rows updated in the backward,
``OutputLayer.fuse_optimizer``) on 1 and on 2 threads, and the former step (``torch.optim`` SGD
on the sparse gradient, ``make_optimizer(layer, fused=False)``) on 1 thread, taken in turn in each
repetition (the order reversed every other one), so the ratios are paired. The roofline fraction
is the bench's (``bigvocab.bench.suites.roofline``): the step's limit from its cost model and
this machine's measured matmul rate and bandwidth at that thread count, over its time.

    python benchmarks/fused_step.py --rows 'hsm[huffman],nce,neg[per-example],sampled' --vocab 1M

The thread count is switched with ``torch.set_num_threads`` inside one process (the kernels'
own threads follow it); ``benchmarks/ab_step.py --after-threads 2`` times the two counts in two
processes instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from bigvocab.bench import bench_layer, make_optimizer, training_step
from bigvocab.bench.harness.config import parse_size
from bigvocab.bench.suites.roofline import (
    matmul_shapes,
    measure_bandwidth,
    measure_matmul_rate,
    probe_table_rows,
    roofline_seconds,
)

HIDDEN, BATCH = 256, 1024  # the bench's --full speed settings, which bench_layer uses


def machine_rates(vocab: int, threads: int) -> dict[str, float]:
    """The roofline's rates on ``threads`` threads, measured as the bench measures them."""
    torch.set_num_threads(threads)
    cpu = torch.device("cpu")
    matmul = measure_matmul_rate(matmul_shapes(HIDDEN, BATCH), cpu)
    bandwidth = measure_bandwidth(cpu, table_rows=probe_table_rows(vocab, HIDDEN), width=HIDDEN)
    return {"best_gflops": matmul["best_gflops"], **bandwidth}


def seconds_per_step(layer, optimizer, workload, threads: int, steps: int) -> float:
    torch.set_num_threads(threads)
    start = time.perf_counter()
    for _ in range(steps):
        training_step(layer, optimizer, workload)
    return (time.perf_counter() - start) / steps


def measure_row(row: str, vocab: int, rates: dict[int, dict], repeats: int, steps: int) -> dict:
    fused_layer, fused_work = bench_layer(row, vocab)
    fused_optimizer = make_optimizer(fused_layer)
    plain_layer, plain_work = bench_layer(row, vocab)
    plain_optimizer = make_optimizer(plain_layer, fused=False)
    runs = {
        "fused, 1 thread": (fused_layer, fused_optimizer, fused_work, 1),
        "fused, 2 threads": (fused_layer, fused_optimizer, fused_work, 2),
        "torch.optim, 1 thread": (plain_layer, plain_optimizer, plain_work, 1),
    }
    for layer, optimizer, workload, threads in runs.values():  # warm-up: numba's compile, the pools
        seconds_per_step(layer, optimizer, workload, threads, steps)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for repeat in range(repeats):
        order = list(runs) if repeat % 2 == 0 else list(reversed(runs))
        for name in order:
            times[name].append(seconds_per_step(*runs[name], steps))
    one, two, plain = times["fused, 1 thread"], times["fused, 2 threads"], times["torch.optim, 1 thread"]
    cost = fused_layer.step_cost(fused_work.target)
    result: dict = {
        "row": row,
        "fused_1_thread_ms": 1e3 * statistics.median(one),
        "fused_2_threads_ms": 1e3 * statistics.median(two),
        "torch_optim_1_thread_ms": 1e3 * statistics.median(plain),
        "two_threads_over_one": statistics.median(b / a for a, b in zip(one, two)),
        "torch_optim_over_fused": statistics.median(p / a for a, p in zip(one, plain)),
    }
    for threads, measured in ((1, one), (2, two)):
        limit = None if cost is None else roofline_seconds(cost.flops, cost.bytes, cost.gathered, rates[threads])
        result[f"roofline_{threads}"] = None if limit is None else limit / statistics.median(measured)
    return result


def percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", required=True, help="comma-separated bench rows, e.g. 'hsm[huffman],nce'")
    parser.add_argument("--vocab", type=parse_size, default=parse_size("1M"), help="V (default 1M)")
    parser.add_argument("--repeats", type=int, default=5, help="paired repetitions (default 5)")
    parser.add_argument("--steps", type=int, default=3, help="steps per timing (default 3)")
    args = parser.parse_args()
    # Huge pages, as the bigvocab command sets them, before torch's first CPU allocation
    # (docs/design/huge-pages.md).
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    rates = {threads: machine_rates(args.vocab, threads) for threads in (1, 2)}
    for threads, rate in rates.items():
        print(json.dumps({"threads": threads, **rate}), flush=True)
    rows = [measure_row(row, args.vocab, rates, args.repeats, args.steps) for row in args.rows.split(",")]
    print(
        f"\nV = {args.vocab:,}, H = {HIDDEN}, N = {BATCH}, torch {torch.__version__}, medians of {args.repeats} pairs"
    )
    print("| row | fused, 1 thread | roofline | fused, 2 threads | roofline | 2 threads / 1 | torch.optim / fused |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['row']} | {r['fused_1_thread_ms']:.1f} ms | {percent(r['roofline_1'])} | "
            f"{r['fused_2_threads_ms']:.1f} ms | {percent(r['roofline_2'])} | {r['two_threads_over_one']:.2f} | "
            f"{r['torch_optim_over_fused']:.2f}x |"
        )


if __name__ == "__main__":
    main()
