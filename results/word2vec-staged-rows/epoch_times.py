"""Seconds for one epoch of ``bench --word2vec``'s synthetic corpus (1M words, skip-gram, the bench's
options): one model on one thread, the same on two threads, and two separate models trained at
the same moment on one thread each (the cores free, no row shared). Two rounds.

    OMP_NUM_THREADS=1 PYTHONPATH=SRC python results/word2vec-staged-rows/epoch_times.py hs|neg
"""
import sys
import threading
import time

import torch

from bigvocab.bench import word2vec as bench


def seconds(trainers) -> float:
    start = time.perf_counter()
    threads = [threading.Thread(target=train, args=(1,)) for train in trainers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(1)
    hs = int(sys.argv[1] == "hs")
    sentences = bench.synthetic_sentences()
    bench._trainer("bigvocab", 1, hs, False, 1, 1, sentences[:50])(1)  # compile first
    for round_ in range(2):
        one = seconds([bench._trainer("bigvocab", 1, hs, False, 1, 1, sentences)])
        two = seconds([bench._trainer("bigvocab", 1, hs, False, 2, 1, sentences)])
        apart = seconds([bench._trainer("bigvocab", 1, hs, False, 1, seed, sentences) for seed in (1, 2)])
        print(f"{sys.argv[1]} round {round_ + 1}: one model, 1 thread {one:.2f} s; 2 threads {two:.2f} s; "
              f"two models at once, 1 thread each {apart:.2f} s", flush=True)


if __name__ == "__main__":
    main()
