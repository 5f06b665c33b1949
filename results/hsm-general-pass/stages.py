"""Where the first version of the compiled pass over a general tree spent its time: that kernel
(one max pass, one pass writing the shifted logits and counting NaN, the exponentials and their
sum, then one look-up and branch per child) cut after each stage, one thread, the 419 test-time
rows of ``hsm[class]`` at V = 10,000 on random logits; ns per child, median of 10 calls
(``ab_steps.median_ms``), two rounds.

    python results/hsm-general-pass/stages.py   # stages.log

Stage 1: the max; 2: + the shifted logits; 3: + the exponentials and log Z; 4: + the writes.
The library's kernel since writes consecutive leaves in one straight loop and takes the shift
inside the exponential (no shifted copy); this script keeps the first version to show why, and
times the library's (``general_leaf_log_probs``, one thread) and torch's ``log_softmax`` (one
thread) on arrays of the same size after it.
"""
import sys
from pathlib import Path

import numpy as np
import torch
from numba import njit

from bigvocab.outputs.tree_kernels import _exp_minus_abs_float32, aligned_width, general_leaf_log_probs
from bigvocab.word2vec.kernels import FAST

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, median_ms  # noqa: E402  (results/ab_steps.py)

ROWS, VOCAB = 419, 10_000


@njit(nogil=True, fastmath=FAST, error_model="numpy")
def first_version(logits, children, child_offsets, out, lo, hi, stage):
    num_nodes = child_offsets.shape[0] - 1
    widest = 0
    for node in range(num_nodes):
        widest = max(widest, child_offsets[node + 1] - child_offsets[node] - 1)
    prefix = np.zeros(num_nodes, dtype=np.float32)
    shifted = np.empty(widest, dtype=np.float32)
    factor = np.empty(widest, dtype=np.float32)
    bits = np.zeros(widest, dtype=np.int32)
    scale = bits.view(np.float32)
    acc = np.float32(0)
    for row in range(lo, hi):
        prefix[0] = 0.0
        for node in range(num_nodes):
            first = child_offsets[node]
            width = child_offsets[node + 1] - first - 1
            column = first - node
            peak = np.float32(0.0)
            for j in range(width):
                value = logits[row, column + j]
                peak = value if value > peak else peak
            if stage < 2:
                acc += peak
                continue
            not_numbers = 0
            for j in range(width):
                shifted[j] = logits[row, column + j] - peak
                not_numbers += 1 if shifted[j] != shifted[j] else 0
            if stage < 3:
                acc += not_numbers
                continue
            _exp_minus_abs_float32(shifted[:width], np.float32(0.0), factor[:width], bits[:width])
            total = np.float32(np.exp(-peak))
            for j in range(width):
                total += factor[j] * scale[j]
            log_z = peak + np.float32(np.log(total)) if not_numbers == 0 else np.float32(np.nan)
            base = prefix[node] - log_z
            if stage < 4:
                acc += base
                continue
            for j in range(width + 1):
                value = base if j == 0 else base + logits[row, column + j - 1]
                child = children[first + j]
                if child >= num_nodes:
                    out[row, child - num_nodes] = value
                else:
                    prefix[child] = value
    return acc
def main() -> None:
    layer, _ = bench_layer("hsm[class]", VOCAB)
    logits = torch.randn(ROWS, aligned_width(VOCAB - 1), generator=torch.Generator().manual_seed(0))
    out = torch.empty(ROWS, VOCAB)
    arrays = (logits.numpy(), layer._children.numpy(), layer._child_offsets.numpy(), out.numpy())
    for stage in (1, 2, 3, 4, 1, 2, 3, 4):
        report(f"stage {stage}", lambda: first_version(*arrays, 0, ROWS, stage))
    torch.set_num_threads(1)
    for _ in range(2):
        report("library kernel", lambda: general_leaf_log_probs(logits, layer._children, layer._child_offsets, layer._leaf_runs,
                                                                  threads=1, out=out))
        report("torch log_softmax", lambda: torch.log_softmax(logits[:, : VOCAB - 1], 1))


def report(label: str, call) -> None:
    milliseconds = median_ms(call, 10)
    print(f"{label}: {milliseconds:.2f} ms, {milliseconds / 1e3 / ROWS / VOCAB * 1e9:.2f} ns a child")

if __name__ == "__main__":
    main()
