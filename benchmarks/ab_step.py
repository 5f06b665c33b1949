"""A/B of one training step between two checkouts of bigvocab, paired and alternating.

Each checkout gets a worker process that imports bigvocab from its own source tree, builds the
bench's layer and workload for the row (``bigvocab.bench.bench_layer``) and waits; the driver then
asks the two workers in turn to time ``--steps`` training steps, alternating which goes first, and
reports the median of the per-repetition ratios before / after (above 1: the after tree is
faster). Both workers stay alive and warm, and only one works at a time, so both see the same
machine: on a shared machine only such paired ratios mean anything.

    git worktree add ../bigvocab-before main
    python benchmarks/ab_step.py --before ../bigvocab-before/src --after src --row 'hsm[huffman]' --vocab 1M
    python benchmarks/ab_step.py --before A/src --after B/src --row nce --vocab 100k --threads 2 --repeats 20
    python benchmarks/ab_step.py --before src --after src --row nce --vocab 1M --threads 1 --after-threads 2

The last form times one tree on 1 thread against 2: the thread scaling of a step, paired. Each
timing also gives the CPU time of the worker's main thread: on a machine that others load, wall
time measures their load, while one thread's CPU time is inflated far less (on one thread it is
the step's work; with kernel threads, its critical path).

Both trees must have the public measuring API of ``bigvocab.bench`` (bigvocab 0.2.0 or later).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def parse_size(text: str) -> int:
    """``10k``, ``1M`` or a plain integer."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def worker(row: str, vocab: int, steps: int, warmup: int) -> None:
    """Build the row's layer once, then answer each line on stdin with the seconds of ``steps`` steps."""
    import torch

    from bigvocab.bench import bench_layer, make_optimizer, training_step

    layer, workload = bench_layer(row, vocab)
    optimizer = make_optimizer(layer)
    for _ in range(warmup):
        training_step(layer, optimizer, workload)
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for _ in sys.stdin:
        start, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            training_step(layer, optimizer, workload)
        seconds, cpu = (time.perf_counter() - start) / steps, (time.thread_time() - cpu) / steps
        print(json.dumps({"seconds": seconds, "cpu": cpu}), flush=True)


def start_worker(tree: Path, threads: int, args: argparse.Namespace) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "THP_MEM_ALLOC_ENABLE": "1"}
    env.update({name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")})
    command = [sys.executable, __file__, "--worker", "--row", args.row, "--vocab", str(args.vocab)]
    command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = json.loads(process.stdout.readline() or '{"ready": false}')  # type: ignore[union-attr]
    if not ready.get("ready"):
        sys.exit(f"the worker for {tree} did not start (see the error above)")
    return process


def ask(process: subprocess.Popen) -> tuple[float, float]:
    """(wall seconds, main-thread CPU seconds) of one step, averaged over the worker's steps."""
    process.stdin.write("time\n")  # type: ignore[union-attr]
    process.stdin.flush()  # type: ignore[union-attr]
    answer = json.loads(process.stdout.readline())  # type: ignore[union-attr]
    return float(answer["seconds"]), float(answer["cpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="the reference tree's src/ directory")
    parser.add_argument("--after", type=Path, help="the candidate tree's src/ directory")
    parser.add_argument("--row", required=True, help="a bench row, e.g. nce, 'hsm[balanced]', 'neg[shared]'")
    parser.add_argument("--vocab", type=parse_size, default=parse_size("100k"), help="V, e.g. 100k or 1M")
    parser.add_argument("--repeats", type=int, default=10, help="pairs of timings (default 10)")
    parser.add_argument("--steps", type=int, default=5, help="steps per timing (default 5)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    parser.add_argument("--after-threads", type=int, help="threads of the after tree's worker (default --threads)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.row, args.vocab, args.steps, args.warmup)
        return
    if args.before is None or args.after is None:
        parser.error("--before and --after are required")
    after_threads = args.after_threads or args.threads
    before, after = start_worker(args.before, args.threads, args), start_worker(args.after, after_threads, args)
    ratios, cpu_ratios = [], []
    times: dict[str, list[float]] = {"before": [], "after": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    for repeat in range(args.repeats):
        order = [("before", before), ("after", after)][:: 1 if repeat % 2 == 0 else -1]
        seconds = {name: ask(process) for name, process in order}
        for name in times:
            times[name].append(seconds[name][0])
            cpu[name].append(seconds[name][1])
        ratios.append(seconds["before"][0] / seconds["after"][0])
        cpu_ratios.append(seconds["before"][1] / seconds["after"][1])
    for process in (before, after):
        process.stdin.close()  # type: ignore[union-attr]
        process.wait()
    median = statistics.median(ratios)
    threads = f"{args.threads}" if after_threads == args.threads else f"{args.threads}/{after_threads}"
    print(
        f"{args.row} V={args.vocab:,} threads={threads}: before {statistics.median(times['before']) * 1e3:.2f} ms, "
        f"after {statistics.median(times['after']) * 1e3:.2f} ms a step; before/after {median:.3f}x "
        f"[{min(ratios):.3f}-{max(ratios):.3f}] over {args.repeats} alternating pairs; main thread's CPU time "
        f"{statistics.median(cpu['before']) * 1e3:.2f} and {statistics.median(cpu['after']) * 1e3:.2f} ms, before/after {statistics.median(cpu_ratios):.3f}x [{min(cpu_ratios):.3f}-{max(cpu_ratios):.3f}]"
    )


if __name__ == "__main__":
    main()
