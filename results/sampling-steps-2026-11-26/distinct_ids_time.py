"""``distinct_ids`` (marking the V classes) against ``torch.unique`` (sorting the ids), one thread:
the measurement behind ``SORT_ABOVE_CLASSES_PER_ID``. Run at the commit before that rule existed
(with it, ``distinct_ids`` itself sorts in the cases where V > 16 x ids).

    python distinct_ids_time.py
"""
import torch, time, statistics
from bigvocab.outputs.functional import distinct_ids
torch.set_num_threads(1)
def t(f, n=30):
    ts=[]
    for _ in range(n):
        a=time.perf_counter(); f(); ts.append(time.perf_counter()-a)
    return statistics.median(ts)*1e3
for V, M in [(v, m) for v in (100_000, 300_000, 1_000_000) for m in (6_144, 26_624, 262_144)]:
    ids = (torch.rand(M) ** 3 * V).long()
    mark = t(lambda: distinct_ids(ids, V))
    sort = t(lambda: torch.unique(ids, sorted=True, return_inverse=True))
    print(f"V={V:>9} ids={M:>7}: mark {mark:.3f} ms  unique(sort) {sort:.3f} ms")
