"""Median bench training step of one layer under one C-allocator policy, in this process.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/malloc-reuse/step_time.py POLICY NAME V THREADS [STEPS]

POLICY: ``default`` (glibc as it starts), ``heap32`` (``M_MMAP_THRESHOLD`` 32 MiB, glibc's
largest, and ``M_TRIM_THRESHOLD`` 1 GiB: blocks up to 32 MiB come from the heap and stay there
once freed), ``heap`` (``M_MMAP_MAX`` 0 as well: every block comes from the heap). ``mallopt`` is
called before torch allocates anything. The workload is the bench's (``make_workload``, H = 256,
N = 1024, SGD); 3 warm-up steps, then the median of STEPS (default 15).
"""
import ctypes
import statistics
import sys
import time

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4
POLICIES = {
    "default": [],
    "heap32": [(M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 1 << 30)],
    "heap": [(M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 1 << 30), (M_MMAP_MAX, 0)],
}


def main() -> None:
    policy, name, vocab, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 15
    libc = ctypes.CDLL("libc.so.6")
    for parameter, value in POLICIES[policy]:
        if libc.mallopt(parameter, value) != 1:
            raise SystemExit(f"mallopt({parameter}, {value}) refused")

    import torch

    from bigvocab.bench.operations import make_optimizer, make_workload, training_step
    from bigvocab.factory import create_output

    torch.set_num_threads(threads)
    options = {"shared": True} if name.endswith("[shared]") else {}
    base = name.split("[")[0]
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    layer = create_output(base, 256, vocab, counts=counts, **options)
    work = make_workload(counts, 256, 1024, 1024, seed=0, device=torch.device("cpu"))
    optimizer = make_optimizer(layer)
    for _ in range(3):
        training_step(layer, optimizer, work)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        times.append(time.perf_counter() - start)
    print(f"{policy:8s} {name:14s} V={vocab} threads={threads}: median {statistics.median(times) * 1e3:.2f} ms"
          f" (min {min(times) * 1e3:.2f})", flush=True)


if __name__ == "__main__":
    main()
