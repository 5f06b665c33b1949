"""The fused pass (float32 softplus inside) on one thread and on two, forced, at small row counts:
where a second thread starts to pay (Huffman tree, H = 256, medians of 15 (7 at 1M), 3 rounds).

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-fused-softplus/threads.py 10000:419 10000:64 10000:16 100000:41 100000:8 1000000:4 1000000:8 1000000:16
"""
import sys, torch
sys.path.insert(0, "results/hsm-fused-softplus")
from ab import median_ms
import bigvocab.outputs.kernel_threads as kt
import bigvocab.outputs.tree_kernels as tk
from bigvocab.factory import create_output
for spec in sys.argv[1:]:
    vocab, rows = map(int, spec.split(":"))
    counts = [max(1, 10_000_000 // (r + 1)) for r in range(vocab)]
    layer = create_output("hsm", 256, vocab, tree="huffman", counts=counts)
    ch = layer._children.view(-1, 2)
    with torch.no_grad():
        logits = layer._example_logits(torch.randn(rows, 256)) * 3
    out = torch.empty(rows, vocab)
    for r in range(3):
        cells = []
        for threads in (1, 2):
            f = lambda: kt.run_in_ranges(tk._top_down, (logits.numpy(), logits.new_empty(0, vocab - 1).numpy(), ch.contiguous().numpy(), out.numpy()), rows, threads, work_per_item=1e12)
            f(); cells.append(f"{threads} thr {median_ms(f, 15 if vocab < 1e6 else 7):.2f}")
        print(spec, "  ".join(cells), flush=True)
