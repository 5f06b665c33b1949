"""distinct_ids before (indexed assignment marks the ids, position[ids] reads them) against after
(scatter_ marks them, index_select reads them) and torch.unique, at the sizes the sampling layers
meet; median ms of 31 calls, two threads, the middle of 3 rounds alternating the order:

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp PYTHONPATH=src python results/distinct-ids-scatter/compare.py; done
"""
import sys
from pathlib import Path

import torch

from bigvocab.outputs.functional import distinct_ids

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

CALLS = 31  # an odd count, so that the median is one call's time
torch.set_num_threads(2)


def marked_by_assignment(ids, num_classes):
    present = torch.zeros(num_classes, dtype=torch.bool)
    present[ids.reshape(-1)] = True
    unique = present.nonzero().squeeze(1)
    position = torch.empty(num_classes, dtype=torch.long)
    position[unique] = torch.arange(unique.numel())
    return unique, position[ids]


def zipf_ids(num_classes, count):
    return torch.multinomial(torch.tensor([1e7 / (r + 1) for r in range(num_classes)]), count, replacement=True)


def unique(ids):
    return torch.unique(ids, sorted=True, return_inverse=True)


def main():
    for V, M in ((10000, 141000), (10000, 65000), (100000, 26000), (100000, 140000), (1000000, 66000),
                 (1000000, 263000)):
        ids = zipf_ids(V, M)
        a, b = marked_by_assignment(ids, V), distinct_ids(ids, V)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        calls = {"assignment": lambda: marked_by_assignment(ids, V), "scatter": lambda: distinct_ids(ids, V),
                 "unique": lambda: unique(ids)}
        times = {name: [] for name in calls}
        for round_ in range(3):
            for name in (list(calls) if round_ % 2 == 0 else list(calls)[::-1]):
                times[name].append(median_ms(calls[name], CALLS))
        print(V, M, " ".join(f"{name} {sorted(t)[1]:.3f}" for name, t in times.items()))


if __name__ == "__main__":
    main()
