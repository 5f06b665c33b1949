"""The logits of a few hidden states against every class row, h Wᵀ + b as one (N, C) product, or
W hᵀ + b (C, N) and a transposing copy into the (N, C) output, alternating.

    THP_MEM_ALLOC_ENABLE=1 python results/few-row-logits/product.py   # product.log

H = 256, C = 10k, 33,278 (Wikitext-2's vocabulary: not a round size), 100k and 1M, N = 1-64
rows, each variant writing into one (N, C) output; median of 5 calls after one untimed call. One
row is also timed as the library takes it: two copies of it, class-major.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import median_ms  # noqa: E402  (results/ab_steps.py)

HIDDEN = 256
CALLS = 5


def main() -> None:
    torch.manual_seed(0)
    for classes in (10_000, 33_278, 100_000, 1_000_000):
        weight, bias = torch.randn(classes, HIDDEN), torch.randn(classes)
        for rows in (1, 2, 4, 8, 12, 16, 32, 64):
            hidden = torch.randn(rows, HIDDEN)
            out, class_major = torch.empty(rows, classes), torch.empty(classes, rows)

            def transposed() -> None:
                out.copy_(torch.addmm(bias.unsqueeze(1), weight, hidden.t(), out=class_major).t())

            row_major = median_ms(lambda: torch.addmm(bias, hidden, weight.t(), out=out), CALLS)
            by_class = median_ms(transposed, CALLS)
            line = (f"C = {classes:,}, N = {rows}: h Wᵀ {row_major:.2f} ms, W hᵀ and transpose {by_class:.2f} ms, "
                    f"{row_major / by_class:.2f}x")
            if rows == 1:
                pair = torch.empty(2, HIDDEN)

                def two_copies() -> None:
                    pair.copy_(hidden.expand(2, -1))
                    out.copy_(torch.addmm(bias.unsqueeze(1), weight, pair.t())[:, :1].t())

                doubled = median_ms(two_copies, CALLS)
                line += f"; the row twice, class-major {doubled:.2f} ms, {row_major / doubled:.2f}x"
            print(line, flush=True)


if __name__ == "__main__":
    main()
