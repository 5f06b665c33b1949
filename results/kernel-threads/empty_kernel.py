"""What splitting one call over two threads costs before any work: a nogil numba kernel over 1,000
floats, run on one range, through ``run_in_ranges`` in two ranges (the caller and a pool thread; before this change two fresh threads: 445 us), on two pool
threads, on one pool thread beside the caller, and on one fresh thread beside the caller; median us.

    python results/kernel-threads/empty_kernel.py
"""
import time, statistics, threading, sys
import numpy as np
from numba import njit
from concurrent.futures import ThreadPoolExecutor
from bigvocab.outputs import kernel_threads
@njit(nogil=True, cache=False)
def k(a, lo, hi):
    for i in range(lo, hi): a[i] += 1.0
a = np.zeros(1000)
k(a, 0, 10)
def t(f, n=300):
    ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e6
kernel_threads.MIN_WORK_PER_THREAD = 1
print("switchinterval", sys.getswitchinterval())
print("1 range us", t(lambda: kernel_threads.run_in_ranges(k, (a,), 1000, 1)))
print("run_in_ranges, 2 ranges us", t(lambda: kernel_threads.run_in_ranges(k, (a,), 1000, 2)))
pool = ThreadPoolExecutor(2)
def pooled():
    fs=[pool.submit(k, a, 0, 500), pool.submit(k, a, 500, 1000)]
    for f in fs: f.result()
print("pool 2 us", t(pooled))
def one_plus_caller():
    f = pool.submit(k, a, 0, 500); k(a, 500, 1000); f.result()
print("pool 1 + caller us", t(one_plus_caller))
def thread_plus_caller():
    th = threading.Thread(target=k, args=(a,0,500)); th.start(); k(a,500,1000); th.join()
print("thread + caller us", t(thread_plus_caller))
