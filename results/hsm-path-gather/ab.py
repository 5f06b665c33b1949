"""One ``hsm`` (Huffman tree) training step of the bench (H = 256, N = 1024, SGD) two ways, on the
same layer in one process, alternating; medians of 15 steps, 3 rounds. ``steps``: the targets'
path steps gathered from the stored paths (this checkout) or found by walking up the tree one
level per step (the code before); ``distinct``: the touched rows' distinct ids by
``functional.distinct_ids`` (this checkout) or by ``torch.unique``.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-path-gather/ab.py steps|distinct V [V ...]
"""
import statistics
import sys
import time
import types

import torch

import bigvocab.outputs.hsm as hsm
from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs.trees import walk_up

N, H = 1024, 256


def walked_steps(layer, target):
    levels = list(walk_up(layer.tree_leaf_parent, layer.tree_leaf_position, layer.tree_node_parent,
                          layer.tree_node_position, target))
    return tuple(torch.cat(parts) for parts in zip(*levels))


def sorted_ids(ids, num_classes):
    return torch.unique(ids, sorted=True, return_inverse=True)


def main() -> None:
    torch.set_num_threads(2)
    what = sys.argv[1]
    names = {"steps": ("walked", "gathered"), "distinct": ("sorted", "marked")}[what]
    for vocab in map(int, sys.argv[2:]):
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        layer = create_output("hsm", H, vocab, counts=counts)
        work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
        optimizer = make_optimizer(layer)
        gathered = layer._steps
        walked = types.MethodType(walked_steps, layer)
        marked = hsm.distinct_ids
        for _ in range(3):
            training_step(layer, optimizer, work)
        for round_ in range(3):
            medians = {}
            for name in names:
                if what == "steps":
                    layer._steps = walked if name == "walked" else gathered
                else:
                    hsm.distinct_ids = sorted_ids if name == "sorted" else marked
                times = []
                for _ in range(15):
                    start = time.perf_counter()
                    training_step(layer, optimizer, work)
                    times.append(time.perf_counter() - start)
                medians[name] = statistics.median(times) * 1e3
            old, new = names
            print(f"V={vocab} round {round_ + 1}: {old} {medians[old]:.2f} ms  {new} {medians[new]:.2f} ms "
                  f"({medians[old] / medians[new]:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
