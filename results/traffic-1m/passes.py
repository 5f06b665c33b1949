"""The memory traffic a V = 1M training step of the sampling and tree layers declares (its cost
model, what the bench's roofline divides) against the traffic of the passes the step's
implementation makes over the touched rows.

    python results/traffic-1m/passes.py   # passes.log

For each layer, one bench training step (H = 256, N = 1024, seed 0) with the pair kernel's
forward wrapped to record U (distinct rows touched, the kernel's table) and P (the scored pairs).
The cost model counts 3 passes over the U rows (read forward, read backward, gradient written)
and the hidden states read and their gradient written. The implementation makes, over rows of
H floats:

* 2U: the gather of the touched rows from the (V, H) weight into a (U, H) table (read, write);
* U: the forward kernel's walk of that table;
* P: the hidden states' gradient, which reads each pair's row again, in example order;
* U: the rows' gradient written;
* 3U: SGD's sparse update (the gradient read, the weight's rows read and written);

plus the same hidden-state traffic. Were every pass at the same bandwidth, the roofline fraction
could reach at most declared / implementation bytes.
"""
from __future__ import annotations

import sys
from pathlib import Path

from bigvocab.bench.operations import make_optimizer, training_step
from bigvocab.outputs import pair_kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import HIDDEN, ROWS, bench_layer  # noqa: E402  (results/ab_steps.py)

SPECS = ("nce", "neg", "hsm[balanced]", "hsm[huffman]")
MB = 1e6


def main() -> None:
    seen: list[tuple[int, int]] = []
    forward = pair_kernels._PairDots.forward

    def recording(ctx, hidden, table, example, row):
        seen.append((table.shape[0], example.shape[0]))
        return forward(ctx, hidden, table, example, row)

    pair_kernels._PairDots.forward = staticmethod(recording)
    for spec in SPECS:
        layer, work = bench_layer(spec, 1_000_000)
        seen.clear()
        training_step(layer, make_optimizer(layer), work)
        (distinct, pairs), = seen
        row_bytes = HIDDEN * 4
        hidden_bytes = 2 * ROWS * HIDDEN * 4
        declared = layer.train_cost(work.target).bytes
        made = (2 + 1 + 1 + 3) * distinct * row_bytes + pairs * row_bytes + hidden_bytes
        print(f"{spec}: U = {distinct:,} rows, P = {pairs:,} pairs; declared {declared / MB:.1f} MB, "
              f"the implementation's passes {made / MB:.1f} MB ({made / declared:.2f}x); "
              f"fraction at most {declared / made:.1%} with every pass at one bandwidth")


if __name__ == "__main__":
    main()
