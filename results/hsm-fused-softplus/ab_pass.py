"""The compiled pass alone, buffers allocated once: this checkout's ``binary_leaf_log_probs``
(float32 softplus taken row by row inside the pass) against OLD_SRC's (torch's softplus into an
(n, V - 1) buffer first), and torch's ``log_softmax`` over (n, V) logits for scale; in one
process, alternating, 3 rounds of medians; torch's threads.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-fused-softplus/ab_pass.py OLD_SRC V:N [V:N ...]
"""
import sys

import torch

import bigvocab.outputs.tree_kernels as tree_kernels
from bigvocab.factory import create_output

sys.path.insert(0, "results/hsm-fused-softplus")
from ab import load_old, median_ms  # noqa: E402

H = 256


def main() -> None:
    old = load_old(sys.argv[1])
    threads = torch.get_num_threads()
    for spec in sys.argv[2:]:
        vocab, rows = map(int, spec.split(":"))
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        generator = torch.Generator().manual_seed(0)
        hidden = torch.randn(rows, H, generator=generator)
        scores = torch.randn(rows, vocab, generator=generator)
        normalised = torch.empty_like(scores)
        reps = 21 if vocab <= 100_000 else 7
        for tree in ("huffman", "balanced"):
            layer = create_output("hsm", H, vocab, tree=tree, counts=counts)
            children = layer._children.view(-1, 2)
            with torch.no_grad():
                logits = layer._example_logits(hidden) * 3  # spread like a trained layer's
            out_old, out_new, scratch = torch.empty(rows, vocab), torch.empty(rows, vocab), torch.empty_like(logits)
            calls = {
                "buffered": lambda: old.binary_leaf_log_probs(logits, children, threads=threads, out=out_old,
                                                              scratch=scratch),
                "fused": lambda: tree_kernels.binary_leaf_log_probs(logits, children, threads=threads, out=out_new),
                "log_softmax": lambda: torch.log_softmax(scores, 1, out=normalised),
            }
            for call in calls.values():
                call()
            torch.testing.assert_close(out_new, out_old)
            for round_ in range(3):
                timed = {name: median_ms(call, reps) for name, call in calls.items()}
                print(f"V={vocab} n={rows} {tree} round {round_ + 1}: buffered {timed['buffered']:8.2f}  fused "
                      f"{timed['fused']:8.2f} ({timed['buffered'] / timed['fused']:.2f}x)  torch log_softmax of (n, V) "
                      f"{timed['log_softmax']:8.2f} ms", flush=True)


if __name__ == "__main__":
    main()
