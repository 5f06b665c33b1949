"""A prototype of ``hsm``'s exact ``log_softmax`` as a fused, node-major, depth-first pass, timed
against ``full``'s and the library's own (example-major, breadth-first) in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-log-softmax-dfs/ab.py 10000 1024 balanced,huffman,random 9
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-log-softmax-dfs/ab.py 100000 1024 balanced,huffman 5
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-log-softmax-dfs/ab.py 1000000 268 balanced,huffman 5

The prototype visits the internal nodes in depth-first order, B at a time (B·n about 2^20
numbers): it gathers the B nodes' weight rows, takes their (B, n) scores in one product (the
node-major orientation, which ran faster than the (n, B) one at every size measured here), and
walks them with a stack of the ancestors' log σ(-x) and x per depth, so no (V - 1, n) buffer of
logits or prefixes exists; a leaf's column of n log-probabilities is written straight into the
(n, V) output. Arguments: V, n (test rows), trees, rounds (the three calls alternate, order
reversed every round). Prints the median of each call and the median ratios full / hsm.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch
from numba import njit

from bigvocab.factory import create_output
from bigvocab.outputs.kernel_threads import run_in_ranges
from bigvocab.outputs.tree_kernels import _softplus_float32
from bigvocab.word2vec.kernels import FAST

H = 256
#: Numbers a block of node scores holds.
BLOCK_ELEMENTS = 1 << 20


def depth_first(children: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Internal nodes in depth-first pre-order (child 0 first), with each one's depth and its
    position under its parent."""
    num_nodes = children.shape[0]
    order, depth, position = (np.empty(num_nodes, np.int64) for _ in range(3))
    stack, k = [(0, 0, 0)], 0
    while stack:
        node, level, slot = stack.pop()
        order[k], depth[k], position[k] = node, level, slot
        k += 1
        for slot_below in (1, 0):
            child = children[node, slot_below]
            if child < num_nodes:
                stack.append((child, level + 1, slot_below))
    return order, depth, position


@njit(nogil=True, cache=True, fastmath=FAST, error_model="numpy")
def _walk(logits, children, depth, position, left_stack, logit_stack, out, num_nodes, lo, hi):
    """Columns lo:hi of B depth-first nodes' scores (B, n): left_stack[d] = log p(node at depth d)
    - softplus(x), logit_stack[d] = x; leaves' log-probabilities into out (n, V)."""
    width = hi - lo
    softplus = np.empty(width, dtype=out.dtype)
    bits = np.empty(width, dtype=np.int32)
    for j in range(logits.shape[0]):
        d = depth[j]
        x = logits[j, lo:hi]
        _softplus_float32(x, softplus, bits)
        left = left_stack[d, lo:hi]
        logit = logit_stack[d, lo:hi]
        if d == 0:
            for r in range(width):
                left[r] = -softplus[r]
                logit[r] = x[r]
        else:
            parent_left = left_stack[d - 1, lo:hi]
            parent_logit = logit_stack[d - 1, lo:hi]
            if position[j] == 0:
                for r in range(width):
                    left[r] = parent_left[r] - softplus[r]
                    logit[r] = x[r]
            else:
                for r in range(width):
                    left[r] = parent_left[r] + parent_logit[r] - softplus[r]
                    logit[r] = x[r]
        first, second = children[j, 0], children[j, 1]
        if first >= num_nodes:
            for r in range(width):
                out[lo + r, first - num_nodes] = left[r]
        if second >= num_nodes:
            for r in range(width):
                out[lo + r, second - num_nodes] = left[r] + logit[r]


def depth_first_log_softmax(layer, hidden: torch.Tensor, plan) -> torch.Tensor:
    order, depth, position, children = plan
    n, num_nodes = hidden.shape[0], layer._num_nodes
    block = max(64, BLOCK_ELEMENTS // n)
    out = hidden.new_empty(n, num_nodes + 1)
    rows, scores = hidden.new_empty(block, H), hidden.new_empty(block, n)
    stacks = [hidden.new_zeros(int(depth.max()) + 1, n) for _ in range(2)]
    for start in range(0, num_nodes, block):
        stop = min(start + block, num_nodes)
        size = stop - start
        torch.index_select(layer.weight, 0, torch.from_numpy(order[start:stop]), out=rows[:size])
        torch.mm(rows[:size], hidden.t(), out=scores[:size])
        arrays = (scores[:size].numpy(), children[start:stop], depth[start:stop], position[start:stop],
                  stacks[0].numpy(), stacks[1].numpy(), out.numpy(), num_nodes)
        run_in_ranges(_walk, arrays, n, torch.get_num_threads(), work_per_item=64 * size)
    return out


def main() -> None:
    vocab, n, trees = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    full = create_output("full", H, vocab, counts=counts).eval()
    hidden = torch.randn(n, H, generator=torch.Generator().manual_seed(0))
    for tree in trees:
        layer = create_output("hsm", H, vocab, counts=counts, tree=tree).eval()
        torch.nn.init.normal_(layer.weight, std=0.1)
        children = layer._children.view(-1, 2).numpy()
        order, depth, position = depth_first(children)
        plan = (order, depth, position, children[order].copy())
        calls = {
            "full": lambda: full.log_softmax(hidden),
            "hsm": lambda: layer.log_softmax(hidden),
            "hsm depth-first": lambda: depth_first_log_softmax(layer, hidden, plan),
        }
        seconds = {name: [] for name in calls}
        with torch.no_grad():
            difference = float((calls["hsm"]() - calls["hsm depth-first"]()).abs().max())
            for round_ in range(rounds):
                for name in list(calls) if round_ % 2 == 0 else list(reversed(calls)):
                    start = time.perf_counter()
                    calls[name]()
                    seconds[name].append(time.perf_counter() - start)

        def ratio(name: str) -> float:
            return statistics.median(f / t for f, t in zip(seconds["full"], seconds[name]))

        gain = statistics.median(a / b for a, b in zip(seconds["hsm"], seconds["hsm depth-first"]))
        ms = {name: statistics.median(times) * 1e3 for name, times in seconds.items()}
        print(f"V={vocab} n={n} {tree}: full {ms['full']:.0f} ms, hsm {ms['hsm']:.0f} ms ({ratio('hsm'):.2f}x), "
              f"depth-first {ms['hsm depth-first']:.0f} ms ({ratio('hsm depth-first'):.2f}x); depth-first / hsm "
              f"{gain:.2f}x faster; max |difference| {difference:.1e}", flush=True)


if __name__ == "__main__":
    main()
