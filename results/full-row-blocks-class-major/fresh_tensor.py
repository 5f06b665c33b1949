"""Allocating and filling a fresh (1M, 256) float32 tensor (1 GiB), against refilling one kept.

    python results/full-row-blocks-class-major/fresh_tensor.py                              # 4 KiB pages
    THP_MEM_ALLOC_ENABLE=1 python results/full-row-blocks-class-major/fresh_tensor.py       # huge pages

(fresh_tensor.log.) Milliseconds, system time and minor page faults per fresh tensor.
"""
import time, resource, torch
W = torch.randn(1_000_000, 256)
def fresh():
    g = torch.empty_like(W); g.fill_(1.0); return g
fresh()
for _ in range(3):
    r0 = resource.getrusage(resource.RUSAGE_SELF); s = time.perf_counter(); fresh(); dt = time.perf_counter() - s
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"fresh 1 GiB + fill {dt*1e3:.0f} ms sys {(r1.ru_stime-r0.ru_stime)*1e3:.0f} ms minflt {r1.ru_minflt-r0.ru_minflt}")
G = torch.empty_like(W); G.fill_(0)
s = time.perf_counter(); G.fill_(1.0); print(f"reused fill {(time.perf_counter()-s)*1e3:.0f} ms")
