"""Splitting a kernel's rows over threads by work: every row once, equal shares, one thread when small."""

import os
import signal
import threading

import numpy as np
import pytest

from bigvocab.kernels import threads as kernel_threads
from bigvocab.kernels.threads import range_bounds, run_in_ranges


def _recorded_ranges(size, threads, **options):
    """The ranges the kernel was called on, in order, and the range the caller's thread ran."""
    ranges, on_caller = [], []
    lock = threading.Lock()
    caller = threading.get_ident()

    def kernel(lo, hi):
        with lock:
            ranges.append((lo, hi))
            if threading.get_ident() == caller:
                on_caller.append((lo, hi))

    run_in_ranges(kernel, (), size, threads, **options)
    return sorted(ranges), on_caller


def test_skewed_work_is_cut_into_equal_shares_not_equal_row_counts():
    """Sorted ids of a Zipf batch: the first rows hold most pairs. Equal row counts would give the
    first of two threads 206 of 220 pairs; equal work gives each about half."""
    counts = np.array([100, 50, 30, 20] + [1] * 20)
    work = np.concatenate([[0], np.cumsum(counts)])
    bounds = range_bounds(counts.size, 2, work)
    assert bounds[0] == 0 and bounds[-1] == counts.size and np.all(np.diff(bounds) >= 0)
    shares = [counts[lo:hi].sum() for lo, hi in zip(bounds[:-1], bounds[1:])]
    assert max(shares) <= work[-1] / 2 + counts.max()  # no range exceeds its share by more than one row
    assert list(bounds) == [0, 1, 24]  # the heavy first row alone, as close to half as rows allow


def test_equal_work_per_row_splits_rows_evenly():
    assert list(range_bounds(10, 3)) == [0, 3, 6, 10]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_every_row_is_run_exactly_once_each_range_on_its_own_thread(monkeypatch, threads):
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    counts = np.array([7, 0, 0, 3, 1, 0, 9, 2])
    work = np.concatenate([[0], np.cumsum(counts)])
    ranges, on_caller = _recorded_ranges(counts.size, threads, work=work)
    covered = [row for lo, hi in ranges for row in range(lo, hi)]
    assert covered == list(range(counts.size))
    assert all(hi > lo for lo, hi in ranges)  # empty ranges get no thread
    assert 1 < len(ranges) <= threads
    assert on_caller == [ranges[0]]  # the caller takes the first range, the pool the others


def test_an_error_in_any_range_reaches_the_caller_after_every_range_ended(monkeypatch):
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    finished = []

    def kernel(lo, hi):
        if lo > 0:
            raise ValueError(f"range {lo}:{hi}")
        finished.append((lo, hi))

    with pytest.raises(ValueError, match="range 5:10"):
        run_in_ranges(kernel, (), 10, 2)
    assert finished == [(0, 5)]


def test_a_forked_child_gets_a_pool_of_its_own(monkeypatch):
    """The parent's pool threads do not exist in a forked child (a DataLoader worker): a range
    submitted to the parent's copy would never run."""
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    _recorded_ranges(8, 2)  # the parent's pool exists
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        signal.alarm(30)  # a range left to a pool thread that does not exist would wait forever
        ranges, _ = _recorded_ranges(8, 2)
        os._exit(0 if ranges == [(0, 4), (4, 8)] else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_work_all_in_one_row_runs_as_one_range_on_the_callers_thread(monkeypatch):
    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)
    monkeypatch.setattr(kernel_threads, "_workers", None)  # as in a fresh process: no pool yet
    ranges, on_caller = _recorded_ranges(2, 2, work=np.array([0, 0, 100]))
    assert ranges == on_caller == [(0, 2)]


def test_a_call_with_too_little_work_stays_on_the_callers_thread():
    size = 64
    ranges, on_caller = _recorded_ranges(size, 4, work_per_item=kernel_threads.MIN_WORK_PER_THREAD / size)
    assert ranges == on_caller == [(0, size)]
    ranges, _ = _recorded_ranges(size, 4, work_per_item=2 * kernel_threads.MIN_WORK_PER_THREAD / size)
    assert len(ranges) == 2  # two threads' worth of work, not four
