"""Counting (distinct_ids with the sort threshold lifted) against torch.unique around the threshold;
median ms of 30 calls, two threads.

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp PYTHONPATH=src python results/distinct-ids-bincount/threshold.py; done
"""
import torch, time, statistics
from bigvocab.outputs.functional import distinct_ids, SORT_ABOVE_CLASSES_PER_ID
torch.set_num_threads(2)
def t(f, n=30):
    f(); ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e3
import bigvocab.outputs.functional as F
for V, M in ((1000000, 66000), (1000000, 100000), (1000000, 125000), (1000000, 200000), (100000, 6600), (100000, 12500), (100000, 25000)):
    ids = torch.multinomial(torch.tensor([1e7/(r+1) for r in range(V)]), M, replacement=True)
    F.SORT_ABOVE_CLASSES_PER_ID = 10**9
    c = t(lambda: distinct_ids(ids, V))
    u = t(lambda: torch.unique(ids, sorted=True, return_inverse=True))
    print(V, M, "per id %.1f count %.3f sort %.3f" % (V / M, c, u))
