"""Brown, 5 epochs, two threads: word2vec's scores with each thread's staged copies of the tree's top
rows (the engine's default on several threads) and without them (every row shared, Hogwild as
before), three seeds each; one thread (no staging either way) for reference.

    OMP_NUM_THREADS=1 PYTHONPATH=src python results/word2vec-staged-rows/quality.py ../shared/data/brown ../shared/data/eval
"""
import statistics
import sys
from pathlib import Path

import torch

from bigvocab.bench import word2vec as bench
from bigvocab.word2vec import engine

brown, eval_dir = Path(sys.argv[1]), Path(sys.argv[2])
torch.set_num_threads(1)
sentences = bench.brown_sentences(brown)
default_staging = engine.staging


def unstaged(arrays, workers, shared):
    return default_staging(arrays, 1, shared)


for label, sg in (("sg + hs", 1), ("cbow + hs", 0)):
    for variant, workers, staging in (("1 thread", 1, default_staging), ("2 threads, staged", 2, default_staging),
                                      ("2 threads, all shared", 2, unstaged)):
        engine.staging = staging
        runs = [bench._scores(bench._trainer("bigvocab", sg, 1, False, workers, seed, sentences)(5).wv, eval_dir)
                for seed in (1, 2, 3)]
        cells = []
        for metric in bench.EVAL_FILES:
            values = [run[metric] for run in runs]
            cells.append(f"{metric} {statistics.mean(values):.3f} ({' / '.join(f'{v:.3f}' for v in values)})")
        print(f"| {label} | {variant} | " + " | ".join(cells) + " |", flush=True)
engine.staging = default_staging
