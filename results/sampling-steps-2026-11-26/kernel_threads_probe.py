"""A V = 1M training step at two torch threads, with the pair kernels on two Python threads as
usual (``both2``) or forced onto one (``kernels1``): is the kernels' own threading what makes two
threads slower than one?

    PYTHONPATH=src python kernel_threads_probe.py {hsm,nce} {both2,kernels1}
"""
import sys, time, statistics, torch
import bigvocab.outputs.kernel_threads as kt
import bigvocab.outputs.pair_kernels as pk
from bigvocab.factory import create_output
from bigvocab.bench.operations import training_step, make_optimizer, make_workload
name, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(2)
if mode == "kernels1":
    orig = pk.run_in_ranges
    pk.run_in_ranges = lambda k, a, size, threads: orig(k, a, size, 1)
V, N, H = 1_000_000, 1024, 256
counts = [max(1, 10_000_000 // (r + 1)) for r in range(V)]
layer = create_output(name, H, V, counts=counts, **({"tree": "balanced"} if name == "hsm" else {}))
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
opt = make_optimizer(layer)
for _ in range(3): training_step(layer, opt, work)
ts = []
for _ in range(20):
    t = time.perf_counter(); training_step(layer, opt, work); ts.append(time.perf_counter() - t)
print(name, mode, f"{statistics.median(ts)*1e3:.1f} ms")
