"""Median time of one bench training step (H = 256, N = 1024, SGD) of a layer, in this process.

    PYTHONPATH=SRC python step_time.py NAME V THREADS ['{"option": value}']

Run it with ``PYTHONPATH`` at two checkouts, alternately, to compare versions of the library on
the same workload: the bench's own ``make_workload`` (Zipfian counts and targets), 3 warm-up steps,
then the median of 15.
"""
import json
import statistics
import sys
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output

N, H = 1024, 256


def main() -> None:
    name, vocab, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    options = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    torch.set_num_threads(threads)
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    layer = create_output(name, H, vocab, counts=counts, **options)
    work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
    optimizer = make_optimizer(layer)
    for _ in range(3):
        training_step(layer, optimizer, work)
    times = []
    for _ in range(15):
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        times.append(time.perf_counter() - start)
    print(f"{name} {options or ''} V={vocab} threads={threads}: median {statistics.median(times) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
