"""distinct_ids before (indexed assignment marks the ids, position[ids] reads them) and after (bincount,
index_select), and torch.unique, at the sizes the sampling layers meet; median ms of 30 calls, two threads.

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp PYTHONPATH=src python results/distinct-ids-bincount/compare.py; done
"""
import torch, time, statistics
torch.set_num_threads(2)
def marked_by_assignment(ids, V):
    present = torch.zeros(V, dtype=torch.bool); present[ids.reshape(-1)] = True
    unique = present.nonzero().squeeze(1)
    position = torch.empty(V, dtype=torch.long); position[unique] = torch.arange(unique.numel())
    return unique, position[ids]
from bigvocab.outputs.functional import distinct_ids
def t(f, n=30):
    f(); ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e3
for V, M in ((10000, 141000), (10000, 65000), (100000, 26000), (100000, 140000), (1000000, 66000), (1000000, 26000), (1000000, 263000)):
    ids = torch.multinomial(torch.tensor([1e7/(r+1) for r in range(V)]), M, replacement=True)
    a, b = marked_by_assignment(ids, V), distinct_ids(ids, V)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    print(V, M, "assignment %.3f bincount %.3f unique %.3f" % (t(lambda: marked_by_assignment(ids, V)), t(lambda: distinct_ids(ids, V)), t(lambda: torch.unique(ids, sorted=True, return_inverse=True))))
