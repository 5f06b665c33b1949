"""The speed rows of a bench run's ``results.json`` held to another machine limit: for each row with
a roofline, its step time, the fraction the run reported and the fraction of ``machine``
(``{"best_gflops", "stream_gbps", "gather_scatter_gbps"}``). Used by ``old_probe.py`` and
``common_limit.py``.
"""
from __future__ import annotations

from typing import Iterator

from bigvocab.bench.roofline import roofline_seconds


def rows_held_to(run: dict, machine: dict, vocab_size: int | None = None) -> Iterator[tuple[dict, float, float]]:
    """(row, step seconds, fraction of ``machine``'s roofline) for the rows with a roofline (of
    ``vocab_size`` only, when given)."""
    for row in run["speed"]:
        if row["roofline_fraction"] is None or vocab_size not in (None, row["vocab_size"]):
            continue
        step = row["roofline_seconds"] / row["roofline_fraction"]
        limit = roofline_seconds(row["required_flops"], row["required_bytes"], row["required_gathered_bytes"], machine)
        yield row, step, limit / step
