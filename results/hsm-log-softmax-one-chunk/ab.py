"""`hsm`'s exact log_softmax with its row chunks as now (a quarter of the rows or more) against one
chunk of all rows, and `full`'s, at the bench's test-time shapes; one process, the three
alternating, median of full time / hsm time over ROUNDS rounds.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/hsm-log-softmax-one-chunk/ab.py V:ROWS [V:ROWS ...]

The bench's shapes: 10000:1024 100000:1024 1000000:268 (H = 256, Zipf counts as in its workload).
One chunk of all rows is forced through ``max_chunk_elements`` = rows x the per-row floats of a
chunk, 2 (V - 1 + V).
"""
import statistics
import sys
import time

import torch

from bigvocab.factory import create_output

H, ROUNDS = 256, 5
TREES = ("balanced", "huffman", "random")


def seconds(operation) -> float:
    start = time.perf_counter()
    operation()
    return time.perf_counter() - start


def main() -> None:
    for spec in sys.argv[1:]:
        vocab, rows = (int(part) for part in spec.split(":"))
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        hidden = torch.randn(rows, H, generator=torch.Generator().manual_seed(0))
        full = create_output("full", H, vocab, counts=counts).eval()
        for tree in TREES:
            quarter = create_output("hsm", H, vocab, counts=counts, tree=tree).eval()
            whole = create_output("hsm", H, vocab, counts=counts, tree=tree,
                                  max_chunk_elements=rows * 2 * (2 * vocab - 1)).eval()
            whole.load_state_dict(quarter.state_dict())
            calls = {"full": lambda: full.log_softmax(hidden), "quarter": lambda: quarter.log_softmax(hidden),
                     "whole": lambda: whole.log_softmax(hidden)}
            times = {name: [] for name in calls}
            with torch.no_grad():
                assert torch.equal(quarter.log_softmax(hidden), whole.log_softmax(hidden))
                for call in calls.values():
                    call()  # warm-up
                for round_ in range(ROUNDS):
                    order = list(calls) if round_ % 2 == 0 else list(reversed(calls))
                    for name in order:
                        times[name].append(seconds(calls[name]))
            ratio = {name: statistics.median(f / h for f, h in zip(times["full"], times[name])) for name in ("quarter", "whole")}
            print(f"V={vocab} rows={rows} {tree:8s}: full {statistics.median(times['full']) * 1e3:8.1f} ms, "
                  f"hsm quarter chunks {statistics.median(times['quarter']) * 1e3:8.1f} ms ({ratio['quarter']:.2f}x), "
                  f"one chunk {statistics.median(times['whole']) * 1e3:8.1f} ms ({ratio['whole']:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
