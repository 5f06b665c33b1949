"""The pass's float32 softplus (``tree_kernels._softplus_float32``) against torch's softplus on the
same vector, one thread, in one process, alternating; ns an element, medians of 201 calls (21 at
1M elements), 3 rounds.

    PYTHONPATH=src python results/hsm-fused-softplus/softplus_speed.py 10000 1000000
"""
import sys
from pathlib import Path

import numpy as np
import torch

from bigvocab.outputs.tree_kernels import _softplus_float32

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import median_ms  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    for size in map(int, sys.argv[1:]):
        x = torch.randn(size, generator=torch.Generator().manual_seed(0)) * 5
        out, into, bits = torch.empty_like(x), torch.empty_like(x), np.empty(size, dtype=np.int32)
        calls = {
            "compiled": lambda: _softplus_float32(x.numpy(), out.numpy(), bits),
            "torch": lambda: torch.ops.aten.softplus.out(x, 1, 40.0, out=into),
        }
        repeats = 201 if size <= 100_000 else 21
        for round_ in range(3):
            ns = {name: median_ms(call, repeats) * 1e6 / size for name, call in calls.items()}
            print(f"{size} elements round {round_ + 1}: compiled {ns['compiled']:.3f} ns  torch {ns['torch']:.3f} ns "
                  f"an element ({ns['torch'] / ns['compiled']:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
