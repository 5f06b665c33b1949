"""Per-step times of a layer right after each of three `full` steps at V = 1M, in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/bench-1m-speed-s17/nce_after_full.py nce   # then =0; nce_after_full.log

H = 256, N = 1024, the bench's workload and SGD step; 15 timed steps (ms) after each `full` step.
Written to see whether `nce`'s 110 ms steps in the first bench run follow from `full`'s step.
"""
import sys, time, torch
from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
H, N, V = 256, 1024, 1_000_000
counts = [max(1, 10_000_000 // (r + 1)) for r in range(V)]
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
full = create_output("full", H, V); fo = make_optimizer(full)
name = sys.argv[1]
lay = create_output(name, H, V, counts=counts); lo = make_optimizer(lay)
for _ in range(5): training_step(lay, lo, work)
for r in range(3):
    training_step(full, fo, work)
    ts = []
    for _ in range(15):
        s = time.perf_counter(); training_step(lay, lo, work); ts.append((time.perf_counter() - s) * 1e3)
    print(f"after full step {r}: " + " ".join(f"{t:.0f}" for t in ts), flush=True)
