"""distinct_ids timings, median ms of 30 calls, two threads.

Before (indexed assignment marks the ids, position[ids] reads them) against after (bincount,
index_select) and torch.unique, at the sizes the sampling layers meet (compare.log):

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp PYTHONPATH=src python results/distinct-ids-bincount/compare.py; done

Counting (the sort threshold lifted) against torch.unique around the threshold (threshold.log):

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp PYTHONPATH=src python results/distinct-ids-bincount/compare.py threshold; done
"""
import statistics
import sys
import time

import torch

import bigvocab.outputs.functional as functional
from bigvocab.outputs.functional import distinct_ids

torch.set_num_threads(2)


def marked_by_assignment(ids, num_classes):
    present = torch.zeros(num_classes, dtype=torch.bool)
    present[ids.reshape(-1)] = True
    unique = present.nonzero().squeeze(1)
    position = torch.empty(num_classes, dtype=torch.long)
    position[unique] = torch.arange(unique.numel())
    return unique, position[ids]


def median_ms(call, calls=30):
    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def zipf_ids(num_classes, count):
    return torch.multinomial(torch.tensor([1e7 / (r + 1) for r in range(num_classes)]), count, replacement=True)


def unique(ids):
    return torch.unique(ids, sorted=True, return_inverse=True)


def before_after():
    for V, M in ((10000, 141000), (10000, 65000), (100000, 26000), (100000, 140000), (1000000, 66000),
                 (1000000, 26000), (1000000, 263000)):
        ids = zipf_ids(V, M)
        a, b = marked_by_assignment(ids, V), distinct_ids(ids, V)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        print(V, M, "assignment %.3f bincount %.3f unique %.3f" % (
            median_ms(lambda: marked_by_assignment(ids, V)), median_ms(lambda: distinct_ids(ids, V)),
            median_ms(lambda: unique(ids))))


def around_threshold():
    functional.SORT_ABOVE_CLASSES_PER_ID = 10**9  # always count
    for V, M in ((1000000, 66000), (1000000, 100000), (1000000, 125000), (1000000, 200000), (100000, 6600),
                 (100000, 12500), (100000, 25000)):
        ids = zipf_ids(V, M)
        print(V, M, "per id %.1f count %.3f sort %.3f" % (
            V / M, median_ms(lambda: distinct_ids(ids, V)), median_ms(lambda: unique(ids))))


if __name__ == "__main__":
    around_threshold() if sys.argv[1:] == ["threshold"] else before_after()
