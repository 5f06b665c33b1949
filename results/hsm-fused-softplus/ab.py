"""hsm's exact ``log_softmax`` with the compiled pass taking float32 softplus row by row (this
checkout) against the pass that reads torch's softplus from an (n, V - 1) buffer (the checkout at
OLD_SRC), and ``full``'s, in one process, alternating; the bench's rows: N' = 2^22 / V (at most
1024), H = 256, torch's threads.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-fused-softplus/ab.py OLD_SRC V [V ...]
"""
import importlib.util
import sys
from pathlib import Path

import torch

import bigvocab.outputs.tree_kernels as tree_kernels
from bigvocab.factory import create_output

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

H = 256


def load_old(old_src: str):
    spec = importlib.util.spec_from_file_location("old_tree_kernels", f"{old_src}/bigvocab/outputs/tree_kernels.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache finds the kernels' module by name
    spec.loader.exec_module(module)
    return module


def main() -> None:
    old = load_old(sys.argv[1])
    fused = (tree_kernels.binary_leaf_log_probs, tree_kernels.softplus_scratch)
    buffered = (old.binary_leaf_log_probs, lambda logits: torch.empty_like(logits))
    for vocab in map(int, sys.argv[2:]):
        rows = min(1024, (1 << 22) // vocab)
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        hidden = torch.randn(rows, H, generator=torch.Generator().manual_seed(0))
        full = create_output("full", H, vocab)
        layers = {tree: create_output("hsm", H, vocab, tree=tree, counts=counts) for tree in ("huffman", "balanced")}
        reps = 21 if vocab <= 100_000 else 9
        with torch.no_grad():
            for tree, layer in layers.items():
                tree_kernels.binary_leaf_log_probs, tree_kernels.softplus_scratch = buffered
                want = layer.log_softmax(hidden)
                tree_kernels.binary_leaf_log_probs, tree_kernels.softplus_scratch = fused
                torch.testing.assert_close(layer.log_softmax(hidden), want)
            full.log_softmax(hidden)
            for round_ in range(3):
                cells = [f"full {median_ms(lambda: full.log_softmax(hidden), reps):7.2f}"]
                for tree, layer in layers.items():
                    timed = {}
                    for name, kernels in (("buffered", buffered), ("fused", fused)):
                        tree_kernels.binary_leaf_log_probs, tree_kernels.softplus_scratch = kernels
                        timed[name] = median_ms(lambda: layer.log_softmax(hidden), reps)
                    cells.append(f"{tree} buffered {timed['buffered']:7.2f} fused {timed['fused']:7.2f} "
                                 f"({timed['buffered'] / timed['fused']:.2f}x)")
                print(f"V={vocab} N'={rows} round {round_ + 1}: " + "  ".join(cells) + "  ms", flush=True)


if __name__ == "__main__":
    main()
