"""Running a ``nogil`` numba kernel over ranges of a dimension on plain Python threads.

A kernel compiled with ``nogil=True`` releases the GIL, so Python threads that each take a
contiguous range ``[lo, hi)`` of independent rows (or columns) run it at once; numba's own
``parallel=True`` would start a second thread pool beside torch's.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np


def run_in_ranges(kernel: Callable[..., None], arrays: tuple, size: int, threads: int) -> None:
    """``kernel(*arrays, lo, hi)`` over ``[0, size)`` split into at most ``threads`` contiguous
    ranges, each on its own thread (on the caller's thread when there is one range)."""
    parts = max(1, min(threads, size))
    bounds = np.linspace(0, size, parts + 1).astype(np.int64)
    if parts == 1:
        kernel(*arrays, 0, size)
        return
    workers = [
        threading.Thread(target=kernel, args=(*arrays, int(lo), int(hi))) for lo, hi in zip(bounds[:-1], bounds[1:])
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
