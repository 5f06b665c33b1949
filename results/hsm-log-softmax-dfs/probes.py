"""Three probes behind the README's explanations of ``ab.py``'s prototype.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-log-softmax-dfs/probes.py   # probes.log

1. orientation: the node scores as ``h @ W.T`` (n, V - 1) or ``W @ h.T`` (V - 1, n), into
   preallocated outputs, alternating, median of 5 calls each (V = 10k with 1,024 rows; V = 1M
   with 268);
2. leaf order: of the tree's leaves in depth-first order (the order the prototype writes their
   columns), the share whose class id is within 16 of the previous leaf's (V = 100k);
3. parts: the prototype's call at V = 1M, 268 rows, a balanced tree, split into the gathers and
   products and the walk, three calls.
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch
from ab import BLOCK_ELEMENTS, H, _walk, depth_first

from bigvocab.factory import create_output
from bigvocab.outputs.kernel_threads import run_in_ranges


def counts_for(vocab: int) -> list[int]:
    return [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]


def orientation(vocab: int, rows: int) -> None:
    weight = torch.randn(vocab - 1, H)
    hidden = torch.randn(rows, H)
    example_major, node_major = torch.empty(rows, vocab - 1), torch.empty(vocab - 1, rows)
    calls = {"h @ W.T": lambda: torch.mm(hidden, weight.t(), out=example_major),
             "W @ h.T": lambda: torch.mm(weight, hidden.t(), out=node_major)}
    seconds = {name: [] for name in calls}
    for call in calls.values():
        call()
    for round_ in range(10):
        for name in list(calls) if round_ % 2 == 0 else list(reversed(calls)):
            start = time.perf_counter()
            calls[name]()
            seconds[name].append(time.perf_counter() - start)
    ms = {name: statistics.median(times) * 1e3 for name, times in seconds.items()}
    print(f"orientation V={vocab} rows={rows}: h @ W.T {ms['h @ W.T']:.1f} ms, W @ h.T {ms['W @ h.T']:.1f} ms "
          f"({ms['h @ W.T'] / ms['W @ h.T']:.2f}x)", flush=True)


def leaf_order(vocab: int) -> None:
    counts = counts_for(vocab)
    for tree in ("balanced", "huffman", "random"):
        layer = create_output("hsm", 8, vocab, counts=counts, tree=tree)
        children = layer._children.view(-1, 2).numpy()
        order, _, _ = depth_first(children)
        leaves = [child - children.shape[0] for row in children[order] for child in row if child >= children.shape[0]]
        near = float((np.abs(np.diff(np.array(leaves))) < 16).mean())
        print(f"leaf order V={vocab} {tree}: {100 * near:.1f}% of depth-first leaves within 16 ids of the previous", flush=True)


def parts(vocab: int, rows: int) -> None:
    counts = counts_for(vocab)
    layer = create_output("hsm", H, vocab, counts=counts, tree="balanced").eval()
    children = layer._children.view(-1, 2).numpy()
    order, depth, position = depth_first(children)
    children = children[order].copy()
    hidden = torch.randn(rows, H)
    num_nodes = layer._num_nodes
    block = max(64, BLOCK_ELEMENTS // rows)
    with torch.no_grad():
        for call in range(4):  # the first compiles the walk
            out = hidden.new_empty(rows, num_nodes + 1)
            weight_rows, scores = hidden.new_empty(block, H), hidden.new_empty(block, rows)
            stacks = [hidden.new_zeros(int(depth.max()) + 1, rows) for _ in range(2)]
            products = walk = 0.0
            for start in range(0, num_nodes, block):
                stop = min(start + block, num_nodes)
                size = stop - start
                begin = time.perf_counter()
                torch.index_select(layer.weight, 0, torch.from_numpy(order[start:stop]), out=weight_rows[:size])
                torch.mm(weight_rows[:size], hidden.t(), out=scores[:size])
                middle = time.perf_counter()
                arrays = (scores[:size].numpy(), children[start:stop], depth[start:stop], position[start:stop],
                          stacks[0].numpy(), stacks[1].numpy(), out.numpy(), num_nodes)
                run_in_ranges(_walk, arrays, rows, torch.get_num_threads(), work_per_item=64 * size)
                products += middle - begin
                walk += time.perf_counter() - middle
            if call:
                print(f"parts V={vocab} rows={rows} balanced, call {call}: gathers and products {products:.2f} s, "
                      f"walk (leaf columns written into the output) {walk:.2f} s", flush=True)


if __name__ == "__main__":
    orientation(10_000, 1024)
    orientation(1_000_000, 268)
    leaf_order(100_000)
    parts(1_000_000, 268)
