"""Exact log_softmax at V = 1M on the bench's test rows (N' = 268, H = 256): each hsm tree against
`full`, timed back to back 3 times (order alternating), median of the ratios full / hsm, as the
bench's log_softmax column does. Run with PYTHONPATH pointing at the code to measure."""
import statistics, sys, time, torch, bigvocab
from bigvocab.bench.side_data import synthetic_side_data

V, H, N = 1_000_000, 256, 268
side = synthetic_side_data(V)
torch.manual_seed(0)
hidden = torch.randn(N, H)
print("code", bigvocab.__file__, "threads", torch.get_num_threads(), flush=True)
full = bigvocab.create_output("full", H, V).eval()


def seconds(layer) -> float:
    start = time.perf_counter()
    layer.log_softmax(hidden)
    return time.perf_counter() - start


with torch.no_grad():
    for tree in sys.argv[1].split(","):
        hsm = bigvocab.create_output("hsm", H, V, tree=tree, counts=side.counts).eval()
        seconds(full), seconds(hsm)  # warm-up (numba compiles or loads its cache)
        ratios, hsm_s = [], []
        for rep in range(3):
            pair = (full, hsm) if rep % 2 == 0 else (hsm, full)
            times = {id(layer): seconds(layer) for layer in pair}
            ratios.append(times[id(full)] / times[id(hsm)])
            hsm_s.append(times[id(hsm)])
        print(f"hsm[{tree}] log_softmax speed-up vs full {statistics.median(ratios):.2f} "
              f"{[round(r, 2) for r in ratios]} hsm s {[round(s, 2) for s in hsm_s]}", flush=True)
