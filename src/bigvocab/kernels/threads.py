"""Running a ``nogil`` numba kernel over ranges of a dimension on plain Python threads.

A kernel compiled with ``nogil=True`` releases the GIL, so Python threads that each take a
contiguous range ``[lo, hi)`` of independent rows (or columns) run it at once; numba's own
``parallel=True`` would start a second thread pool beside torch's.

The ranges hold equal *work*, not equal numbers of rows: a sampling layer's distinct ids, sorted,
put the frequent words (hundreds of pairs each) first and the rare ones (one pair) last, and a
tree's sorted nodes put the root (one pair per example) first, so equal row counts gave one thread
most of the pairs. The caller's thread runs the first range and a persistent pool the others:
starting two fresh threads and joining them cost about 450 us a call, a pool
thread beside the caller 72-160 us for an empty kernel (``docs/design/kernel-threads.md``). A call with too
little work for that stays on the caller's thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: multiply-adds (or comparable inner steps) per thread below which one more thread does not
#: pay. On two cores, inside a V = 1M training step of ``hsm`` or ``nce`` (5-7 x 2**20
#: multiply-adds a call) the kernels ran 3-20% faster on one thread than on two; an isolated call
#: of 2**24 (65,536 Zipf-distributed pairs at H = 256) ran 1.78x faster on two
#: (``docs/design/kernel-threads.md``).
MIN_WORK_PER_THREAD = 2**23


def range_bounds(size: int, parts: int, work: np.ndarray | None = None) -> np.ndarray:
    """Bounds (parts + 1,) that cut ``[0, size)`` into ``parts`` contiguous ranges of about equal
    work: ``work`` (size + 1,) is the cumulative work before each item (a counting sort's offsets),
    None for equal work per item. Each cut is the row boundary nearest its share; a range may be
    empty when one item holds more than its share."""
    if work is None:
        return np.linspace(0, size, parts + 1).astype(np.int64)
    shares = np.linspace(0, work[-1], parts + 1)[1:-1]
    after = np.searchsorted(work, shares, side="left").clip(1, size)  # first cut at or past the share
    before = after - 1
    inner = np.where(shares - work[before] < work[after] - shares, before, after)  # the nearer cut
    return np.concatenate([[0], inner, [size]]).astype(np.int64)


def run_in_ranges(
    kernel: Callable[..., None],
    arrays: tuple,
    size: int,
    threads: int,
    *,
    work: np.ndarray | None = None,
    work_per_item: float = 1.0,
    summed: int | None = None,
) -> None:
    """``kernel(*arrays, lo, hi)`` over ``[0, size)`` split into at most ``threads`` contiguous
    ranges of about equal work: the first on the caller's thread, the others on the pool's.

    ``work`` (size + 1,) is the cumulative count of inner steps before each item (None: one per
    item) and ``work_per_item`` the multiply-adds of one inner step; a range gets a thread only
    for each :data:`MIN_WORK_PER_THREAD` multiply-adds of the whole call. ``arrays[summed]``, when
    given, is an output that any range may add into (not one owned by its items): each range but
    the first adds into its own zeroed copy, added to it once all have run.
    """
    total = (size if work is None else int(work[-1])) * work_per_item
    parts = max(1, min(threads, size, int(total // MIN_WORK_PER_THREAD)))
    ranges = [(0, size)]
    if parts > 1:  # most calls inside a step have one part, and need no bounds computed
        bounds = range_bounds(size, parts, work)
        ranges = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    if len(ranges) == 1:  # one part, or all the work in one range
        kernel(*arrays, 0, size)
        return
    arguments = [arrays for _ in ranges[1:]]
    if summed is not None:
        arguments = [(*arrays[:summed], np.zeros_like(arrays[summed]), *arrays[summed + 1 :]) for _ in ranges[1:]]
    pool = _pool(len(ranges) - 1)
    others = [pool.submit(kernel, *own, lo, hi) for own, (lo, hi) in zip(arguments, ranges[1:])]
    try:
        kernel(*arrays, *ranges[0])
    finally:
        for other in others:
            other.result()  # waits for every range, and raises what a range raised
    if summed is not None:
        for own in arguments:
            np.add(arrays[summed], own[summed], out=arrays[summed])


_workers: ThreadPoolExecutor | None = None
_workers_size = 0
_workers_pid = 0
_workers_lock = threading.Lock()


def _pool(size: int) -> ThreadPoolExecutor:
    """A pool of at least ``size`` threads, made again in a forked child (whose copy of the parent's
    pool has no threads behind it) or when more threads are asked for."""
    global _workers, _workers_size, _workers_pid
    with _workers_lock:
        if _workers is None or _workers_pid != os.getpid() or _workers_size < size:
            if _workers is not None and _workers_pid == os.getpid():
                _workers.shutdown(wait=False)
            _workers = ThreadPoolExecutor(size, thread_name_prefix="bigvocab-kernel")
            _workers_size, _workers_pid = size, os.getpid()
        return _workers
