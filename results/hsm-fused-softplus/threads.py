"""The fused pass (float32 softplus inside) on one thread and on two, forced, at small row counts:
where a second thread starts to pay (Huffman tree, H = 256, medians of 15 calls (7 at 1M), 3 rounds).

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-fused-softplus/threads.py 10000:419 10000:64 10000:16 100000:41 100000:8 1000000:4 1000000:8 1000000:16
"""
import sys
from pathlib import Path

import torch

import bigvocab.outputs.kernel_threads as kernel_threads
import bigvocab.outputs.tree_kernels as tree_kernels
from bigvocab.factory import create_output

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import median_ms  # noqa: E402


def main() -> None:
    for spec in sys.argv[1:]:
        vocab, rows = map(int, spec.split(":"))
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        layer = create_output("hsm", 256, vocab, tree="huffman", counts=counts)
        children = layer._children.view(-1, 2).contiguous().numpy()
        with torch.no_grad():
            logits = layer._example_logits(torch.randn(rows, 256)) * 3
        out = torch.empty(rows, vocab)
        arrays = (logits.numpy(), logits.new_empty(0, vocab - 1).numpy(), children, out.numpy())
        for _ in range(3):
            cells = []
            for threads in (1, 2):
                # a huge weight per row: every call gets all the threads asked for
                def call() -> None:
                    kernel_threads.run_in_ranges(tree_kernels._top_down, arrays, rows, threads, work_per_item=1e12)

                cells.append(f"{threads} thr {median_ms(call, 15 if vocab < 1_000_000 else 7):.2f}")
            print(spec, "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
