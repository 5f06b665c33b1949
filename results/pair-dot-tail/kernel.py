"""The scoring kernel alone, hot in cache: the library's ``pair_kernels._dots`` against the code
before (``ab._dots_before``), alternating, on one thread.

    python results/pair-dot-tail/kernel.py   # kernel.log

N = 1024 hidden states, H = 256, 26 pairs per example (``nce``'s target and 25 noise draws) over
U = 12,478 Zipf-distributed table rows (the distinct rows of ``nce``'s step at V = 1M); also with
every pair reading the same hidden row (no cache misses: the arithmetic alone). Median of 40
calls after one untimed call, three rounds.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from bigvocab.outputs import pair_kernels

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import _dots_before  # noqa: E402  (results/pair-dot-tail/ab.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import median_ms  # noqa: E402  (results/ab_steps.py)

EXAMPLES, WIDTH, PER_EXAMPLE, ROWS = 1024, 256, 26, 12_478


def main() -> None:
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((EXAMPLES, WIDTH)).astype(np.float32)
    table = rng.standard_normal((ROWS, WIDTH)).astype(np.float32)
    zipf = 1 / np.arange(1, ROWS + 1)
    row = rng.choice(ROWS, size=EXAMPLES * PER_EXAMPLE, p=zipf / zipf.sum())
    row[:ROWS] = np.arange(ROWS)  # every row at least once
    rng.shuffle(row)
    example = np.repeat(np.arange(EXAMPLES), PER_EXAMPLE)
    offsets, order = pair_kernels._group(row, ROWS)
    pairs = row.size
    outputs = {}
    for label, examples in (("Zipf pairs", example), ("one hidden row", np.zeros_like(example))):
        for round_ in range(3):
            for name, kernel in (("first term", _dots_before), ("zero start", pair_kernels._dots)):
                out = np.empty(pairs, dtype=np.float32)
                arrays = (hidden, table, offsets, order, examples, out, 0, ROWS)
                ms = median_ms(lambda: kernel(*arrays), 40)
                outputs[name] = out
                print(f"{label}, round {round_ + 1}: {name} {ms:.3f} ms, "
                      f"{pairs * WIDTH / ms / 1e6:.1f} G multiply-adds/s", flush=True)
    difference = np.abs(outputs["first term"] - outputs["zero start"]).max()
    print(f"largest difference between the two kernels' scores: {difference:.2e}")


if __name__ == "__main__":
    main()
