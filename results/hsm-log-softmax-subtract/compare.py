"""Exact ``log_softmax`` of ``hsm`` (balanced and Huffman trees) and of ``full`` at V = 1M, H = 256,
on the 268 rows the `--full` bench times there, 2 threads, median of 5 calls, in one process.

    git worktree add /tmp/before 17263db
    for round in 1 2; do for src in /tmp/before/src src; do
        THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=$src python results/hsm-log-softmax-subtract/compare.py; done; done   # compare.log

Run alternately on the code before (softplus, then a pass negating it, then the compiled
top-down pass adding) and after (the pass subtracts the softplus) to measure the pass saved.
"""
import sys
from pathlib import Path

import torch

import bigvocab
from bigvocab.bench.side_data import synthetic_side_data

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median of 5)

V, H, ROWS = 1_000_000, 256, 268


def median_seconds(call) -> float:
    return median_ms(call) / 1e3


def main() -> None:
    torch.set_num_threads(2)
    counts = synthetic_side_data(V).counts
    hidden = torch.randn(ROWS, H)
    full = bigvocab.create_output("full", H, V).eval()
    line = [f"{bigvocab.__file__.split('/src/')[0]}:"]
    with torch.no_grad():
        full_seconds = median_seconds(lambda: full.log_softmax(hidden))
        line.append(f"full {full_seconds:.3f} s")
        for tree in ("balanced", "huffman"):
            hsm = bigvocab.create_output("hsm", H, V, counts=counts, tree=tree).eval()
            seconds = median_seconds(lambda: hsm.log_softmax(hidden))
            line.append(f"hsm[{tree}] {seconds:.3f} s ({full_seconds / seconds:.2f}x full)")
            del hsm
    print(", ".join(line), flush=True)


if __name__ == "__main__":
    main()
