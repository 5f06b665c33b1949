"""Median ms per training step of bench rows, the bench's own workload (N=1024, H=256, SGD)."""
import statistics, sys, time, torch
from bigvocab.bench.selection import candidate_by_label
from bigvocab.bench.side_data import build_layer, synthetic_side_data
from bigvocab.bench.operations import make_workload, make_optimizer, training_step
sizes = [int(float(v)) for v in sys.argv[1].split(',')]
labels = sys.argv[2].split(',')
import bigvocab; print('code', bigvocab.__file__, 'threads', torch.get_num_threads(), flush=True)
for V in sizes:
    side = synthetic_side_data(V)
    work = make_workload(side.counts, 256, 1024, 16, seed=0, device=torch.device('cpu'))
    for label in labels:
        layer, _ = build_layer(candidate_by_label(label), 256, V, side, num_samples=None)
        opt = make_optimizer(layer)
        for _ in range(5): training_step(layer, opt, work)
        blocks = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(20): training_step(layer, opt, work)
            blocks.append((time.perf_counter() - t) / 20 * 1e3)
        print(f"V={V} {label} ms/step median {statistics.median(blocks):.3f} min {min(blocks):.3f} max {max(blocks):.3f}", flush=True)
