"""Peak step memory of a few rows at V = 100k from the bench's memory worker, in its order: the
first row to use the compiled pair kernels used to be charged numba's load.

    python memory_first_row.py
"""
from bigvocab.bench.memory import measure_memory

SPEC = {
    "labels": ["full", "hsm[balanced]", "nce", "neg[per-example]"],
    "vocab_size": 100_000,
    "hidden": 256,
    "batch": 1024,
    "seed": 0,
    "num_samples": None,
    "device": "cpu",
    "threads": 2,
}

if __name__ == "__main__":
    for label, row in measure_memory(SPEC).items():
        print(label, row)
