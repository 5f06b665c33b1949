"""The roofline of a training step: the arithmetic it must do, the arithmetic it does, and the
machine's dense matrix-multiply rate measured in the same run.

``required`` flops (and bytes) are the layer's own declaration, ``layer.step_cost(target)``
(:mod:`bigvocab.outputs.cost`; its ``train_cost`` and the state its fused optimiser moves): the multiply-adds of the method's forward pass, times three,
because the backward of a product ``Y = X W`` costs two more products of the same size -- the
standard 1 + 2 accounting of Kaplan et al. (2020), section 2.1. ``counted`` flops are what the
step actually executes in matrix products, counted by
:class:`torch.utils.flop_counter.FlopCounterMode`; a layer without a cost model reports its
counted flops (and says so), so every row still gets a fraction of the limit.

A softmax layer's training step is, at best, a few dense products; the best rate the machine
reaches on products of the same shapes is therefore the limit any layer can approach, and each
layer's achieved rate (required flops / step time) is reported as a fraction of it.

Sampled and tree layers do little arithmetic per byte: their limit is memory traffic. The bench
therefore also measures two bandwidths -- a streaming copy, and rows gathered (``index_select``)
and scattered (``index_add_``) at random positions of a table -- and each step's *roofline* time
is the larger of its compute time (required flops / matmul rate) and its memory time (streamed
bytes / copy bandwidth + gathered bytes / gather-scatter bandwidth, from the layer's declared
:class:`~bigvocab.outputs.cost.Cost`). ``roofline_fraction`` = roofline time / measured time: 1 is
the hardware limit (Williams et al. 2009).

The gather table has the shape of the (V, H) weight the layers at that V gather from
(:func:`probe_table_rows`), so each V gets its own bandwidths: rows come from the caches at
V = 10k and from memory at V = 1M, and from a 1 GiB table they come slower than from a 128 MiB
one (1.37x, ``docs/design/bench-measurement.md``), which a single probe table of a fixed
size priced the same at every V.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from bigvocab.bench.harness.rows import SpeedRow
from bigvocab.bench.harness.timing import inner_loop_size, seconds_per_call
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost

#: Columns of the skinny products: one chunk of the vocabulary, as the chunked softmax uses.
CHUNK = 16_384

#: The gather probe's table is at most this large (2 GiB), so that probing a V whose weight fits
#: in memory only once, beside its layers, cannot exhaust it.
MAX_PROBE_TABLE_BYTES = 1 << 31
_FLOAT32_BYTES = 4


def matmul_shapes(hidden: int, batch: int, *, square: int = 2048) -> list[tuple[int, int, int]]:
    """(m, k, n) products like those of a softmax step over a vocabulary chunk of width C:
    logits (N x H)(H x C), weight gradient (C x N)(N x H), hidden gradient (N x C)(C x H),
    plus one square product, which is usually the fastest a BLAS gets."""
    return [
        (square, square, square),
        (batch, hidden, CHUNK),
        (CHUNK, batch, hidden),
        (batch, CHUNK, hidden),
    ]


def measure_matmul_rate(
    shapes: list[tuple[int, int, int]], device: torch.device, *, repeats: int = 3, min_time: float = 0.05, seed: int = 0
) -> dict:
    """Best GFLOP/s (2·m·k·n flops per product, float32) over ``shapes``, each timed ``repeats``
    times after a warm-up; returns ``{"best_gflops", "shapes": [{m, k, n, gflops}]}``."""
    generator = torch.Generator().manual_seed(seed)
    measured = []
    for m, k, n in shapes:
        left = torch.randn(m, k, generator=generator).to(device)
        right = torch.randn(k, n, generator=generator).to(device)

        def product() -> torch.Tensor:
            return left @ right  # noqa: B023  (timed in this iteration)

        inner = inner_loop_size(seconds_per_call(product, 1, device), min_time)
        best = min(seconds_per_call(product, inner, device) for _ in range(repeats))
        measured.append({"m": m, "k": k, "n": n, "gflops": 2.0 * m * k * n / best / 1e9})
    return {"best_gflops": max(row["gflops"] for row in measured), "shapes": measured}


def measure_bandwidth(
    device: torch.device,
    *,
    stream_elements: int = 1 << 25,
    table_rows: int = 1 << 17,
    width: int = 256,
    gathered_rows: int = 1 << 15,
    repeats: int = 3,
    min_time: float = 0.05,
    seed: int = 0,
) -> dict:
    """GB/s of a streaming copy (``stream_elements`` float32 read and written) and of float32 rows
    of ``width`` gathered from and added back into random rows of a (``table_rows``, ``width``)
    table (128 MiB by default, beyond the caches): ``{"stream_gbps", "gather_gbps", "scatter_gbps",
    "gather_scatter_gbps"}`` (the last the slower of the two, what a step that gathers rows and
    scatters their gradients is held to)."""
    generator = torch.Generator().manual_seed(seed)
    source = torch.randn(stream_elements, generator=generator).to(device)
    target = torch.empty_like(source)
    table = torch.randn(table_rows, width, generator=generator).to(device)
    ids = torch.randint(0, table_rows, (gathered_rows,), generator=generator).to(device)
    rows = table.index_select(0, ids)
    row_bytes = gathered_rows * width * table.element_size()

    def best_seconds(operation: Callable[[], object]) -> float:
        inner = inner_loop_size(seconds_per_call(operation, 1, device), min_time)
        return min(seconds_per_call(operation, inner, device) for _ in range(repeats))

    stream = 2 * source.numel() * source.element_size() / best_seconds(lambda: target.copy_(source))
    # A gather reads each row and writes it out; a scatter-add reads it, and reads and writes its target.
    gather = 2 * row_bytes / best_seconds(lambda: torch.index_select(table, 0, ids, out=rows))
    scatter = 3 * row_bytes / best_seconds(lambda: table.index_add_(0, ids, rows))
    gbps = {"stream_gbps": stream / 1e9, "gather_gbps": gather / 1e9, "scatter_gbps": scatter / 1e9}
    return {**gbps, "gather_scatter_gbps": min(gbps["gather_gbps"], gbps["scatter_gbps"])}


def probe_table_rows(vocab_size: int, width: int) -> int:
    """Rows of the (float32) gather probe's table at ``vocab_size``: the (V, width) weight's, at
    most :data:`MAX_PROBE_TABLE_BYTES`."""
    return max(1, min(vocab_size, MAX_PROBE_TABLE_BYTES // (width * _FLOAT32_BYTES)))


def probe_table_mib(vocab_size: int, width: int) -> float:
    """MiB of the gather probe's table at ``vocab_size``."""
    return probe_table_rows(vocab_size, width) * width * _FLOAT32_BYTES / 2**20


def roofline_seconds(cost_flops: float, cost_bytes: float, gathered_bytes: float, machine: dict) -> float:
    """The larger of compute time and memory time of an operation on ``machine``
    (``{"best_gflops", "stream_gbps", "gather_scatter_gbps"}``); see the module docstring."""
    compute = cost_flops / (machine["best_gflops"] * 1e9)
    memory = (cost_bytes - gathered_bytes) / (machine["stream_gbps"] * 1e9) + gathered_bytes / (
        machine["gather_scatter_gbps"] * 1e9
    )
    return max(compute, memory)


def add_roofline_fractions(rows: list[SpeedRow], best_gflops: float, bandwidth: dict[str, dict]) -> None:
    """``matmul_fraction`` (achieved rate / best matmul rate) and ``roofline_fraction`` (roofline
    time / step time) on every speed row with a cost, from the best rates of the run (known only at
    its end: they are re-measured after every V and the best kept); ``bandwidth`` maps each V
    (``str(V)``) to the rates measured on its table (:func:`measure_bandwidth`), and a row whose V
    has none gets no roofline."""
    for row in rows:
        if row.achieved_gflops is not None:
            row.matmul_fraction = row.achieved_gflops / best_gflops
        step_seconds = row.train_seconds
        rates = bandwidth.get(str(row.vocab_size))
        if row.required_flops is not None and row.required_bytes is not None and step_seconds and rates is not None:
            limit = roofline_seconds(
                row.required_flops,
                row.required_bytes,
                row.required_gathered_bytes or 0.0,
                {"best_gflops": best_gflops, **rates},
            )
            row.roofline_seconds = limit
            row.roofline_fraction = limit / step_seconds


def required_train_cost(layer: OutputLayer, target: Tensor) -> tuple[Cost | None, str]:
    """(cost, source) from the layer's cost model, with its fused optimiser's state
    (``OutputLayer.step_cost``); (None, reason) when it declares none."""
    cost = layer.step_cost(target)
    return (None, "no cost model") if cost is None else (cost, "formula")


def counted_flops(step: Callable[[], object]) -> float | None:
    """Matrix-product flops that ``step()`` executes (forward and backward), or None when the
    step runs no product the counter knows."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step()
    total = counter.get_total_flops()
    return float(total) if total else None
