"""Where one bench row's training step spends its time: torch's profiler over ``--steps`` steps
of the bench's workload (H = 256, N = 1024), the operators by self CPU time.

    python benchmarks/profile_step.py --row nce --vocab 1M
    python benchmarks/profile_step.py --row 'hsm[balanced]' --vocab 100k --threads 2

After a few untimed steps, prints the most expensive operators with their time per step, their
share of the profiled self time and their calls per step. Run with ``PYTHONPATH=OTHER/src`` to
profile another checkout's code.
"""

from __future__ import annotations

import argparse
import os

import torch
from torch.profiler import ProfilerActivity, profile

from bigvocab.bench import bench_layer, make_optimizer, training_step
from bigvocab.bench.harness.config import parse_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", required=True, help="a bench row, e.g. nce, 'hsm[balanced]', 'neg[shared]'")
    parser.add_argument("--vocab", type=parse_size, default=parse_size("1M"), help="V, e.g. 100k or 1M")
    parser.add_argument("--steps", type=int, default=10, help="profiled steps (default 10)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads")
    parser.add_argument("--top", type=int, default=12, help="operators listed (default 12)")
    args = parser.parse_args()
    # Huge pages, as the bigvocab command sets them, before torch's first CPU allocation
    # (docs/design/huge-pages.md).
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    torch.set_num_threads(args.threads)
    layer, workload = bench_layer(args.row, args.vocab)
    optimizer = make_optimizer(layer)
    for _ in range(args.warmup):
        training_step(layer, optimizer, workload)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(args.steps):
            training_step(layer, optimizer, workload)
    events = profiler.key_averages()
    total = sum(event.self_cpu_time_total for event in events) or 1.0
    print(f"{args.row} V={args.vocab:,}, {args.threads} thread(s), torch's profiler over {args.steps} steps:")
    for event in sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]:
        per_step = event.self_cpu_time_total / args.steps / 1e3
        share = 100 * event.self_cpu_time_total / total
        print(f"  {event.key[:44]:<44} {per_step:8.2f} ms/step {share:5.1f}%  ({event.count // args.steps} calls/step)")


if __name__ == "__main__":
    main()
