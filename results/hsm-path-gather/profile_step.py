"""torch's profiler over 20 of the bench's training steps (H = 256, N = 1024, SGD, 2 threads) of one
layer: the operators by their own CPU time.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-path-gather/profile_step.py NAME V
"""
import sys

import torch
from torch.profiler import profile

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output


def main() -> None:
    name, vocab = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(2)
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    layer = create_output(name, 256, vocab, counts=counts)
    work = make_workload(counts, 256, 1024, 1024, seed=0, device=torch.device("cpu"))
    optimizer = make_optimizer(layer)
    for _ in range(5):
        training_step(layer, optimizer, work)
    with profile() as profiler:
        for _ in range(20):
            training_step(layer, optimizer, work)
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
