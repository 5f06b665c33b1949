"""``hsm``'s training step (the bench's: H = 256, N = 1024, SGD, 2 threads) on a binary tree two
ways on the same layer in one process, alternating, medians of 15 steps, 3 rounds: the general
n-ary decisions (segments of arity - 1 logits and their normaliser; the code before, still what
n-ary trees take) and the binary path (-softplus of +-s).

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-binary-steps/ab.py V [V ...]
"""
import sys
import time
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

N, H = 1024, 256




def main() -> None:
    torch.set_num_threads(2)
    for vocab in map(int, sys.argv[1:]):
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
        for tree in ("huffman", "balanced"):
            layer = create_output("hsm", H, vocab, counts=counts, tree=tree)
            optimizer = make_optimizer(layer)
            for round_ in range(3):
                times = {}
                for label, binary in (("general", False), ("binary", True)):
                    layer._binary = binary
                    times[label] = median_ms(lambda: training_step(layer, optimizer, work), 15)
                print(f"V={vocab} {tree} round {round_ + 1}: general {times['general']:.2f} ms, binary "
                      f"{times['binary']:.2f} ms, {times['general'] / times['binary']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
