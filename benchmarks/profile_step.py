"""Where one layer's training step spends its time: torch's profiler over 10 bench steps (H = 256,
N = 1024, the bench's Zipf workload, SGD, torch's threads), the operators by self CPU time.

    THP_MEM_ALLOC_ENABLE=1 python results/profile_step.py nce 1000000
    THP_MEM_ALLOC_ENABLE=1 python results/profile_step.py 'hsm[balanced]' 1000000

After 5 untimed steps, prints the 12 most expensive operators with their time per step and
share of the profiled self time. Run with PYTHONPATH at another checkout to profile its code.
"""
from __future__ import annotations

import sys
from pathlib import Path

from torch.profiler import ProfilerActivity, profile

from bigvocab.bench.operations import make_optimizer, training_step

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_steps import bench_layer  # noqa: E402  (results/ab_steps.py)


def main() -> None:
    spec, vocab = sys.argv[1], int(sys.argv[2])
    layer, work = bench_layer(spec, vocab)
    optimizer = make_optimizer(layer)
    for _ in range(5):
        training_step(layer, optimizer, work)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(10):
            training_step(layer, optimizer, work)
    events = profiler.key_averages()
    print(f"{spec} V={vocab}, torch's profiler over 10 steps:")
    total = sum(event.self_cpu_time_total for event in events)
    for event in sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:12]:
        print(f"  {event.key[:40]:<40} {event.self_cpu_time_total / 10 / 1e3:7.2f} ms/step "
              f"{100 * event.self_cpu_time_total / total:5.1f}%  ({event.count // 10} calls/step)")


if __name__ == "__main__":
    main()
