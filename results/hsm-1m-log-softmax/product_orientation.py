"""The same (n, V) score product at V = 1M, H = 256, one thread, written four ways: ``h @ W.T``,
``addmm`` with the bias, ``W @ h.T`` (node-major), and ``(W @ h.T).T`` made contiguous; plus
``F.linear``. Median of 5 calls (ms) for n = 4, 64 and 419 rows.

    python results/hsm-1m-log-softmax/product_orientation.py
"""
from __future__ import annotations

import torch
from hsm_vs_full import median_ms  # this folder's timing helper

V, H = 1_000_000, 256


def main() -> None:
    torch.set_num_threads(1)
    weight, bias = torch.randn(V, H), torch.randn(V)
    for rows in (4, 64, 419):
        h = torch.randn(rows, H)
        print(rows,
              "h@W.T %.1f" % median_ms(lambda: h @ weight.t()),
              "addmm %.1f" % median_ms(lambda: torch.addmm(bias, h, weight.t())),
              "W@h.T %.1f" % median_ms(lambda: weight @ h.t()),
              "(W@h.T).T.contig %.1f" % median_ms(lambda: (weight @ h.t()).t().contiguous()),
              "F.linear %.1f" % median_ms(lambda: torch.nn.functional.linear(h, weight, bias)))


if __name__ == "__main__":
    main()
