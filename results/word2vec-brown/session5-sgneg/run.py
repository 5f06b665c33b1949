"""Skip-gram + neg on Brown, bigvocab (now with gensim 4's initial vectors) against gensim, seeds
1-3, one line per (library, seed) as it finishes: ``bench --word2vec --brown``'s quality runs
(5 epochs, one thread, the same sentences and evaluators) for this one combination.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=src python results/word2vec-brown/session5-sgneg/run.py /work/shared/data/brown
"""
import json
import sys
from pathlib import Path

from bigvocab.bench import word2vec as bench

brown = Path(sys.argv[1])
sentences = bench.brown_sentences(brown)
for seed in (1, 2, 3):
    for library in ("bigvocab", "gensim"):
        scores = bench._scores(bench._trainer(library, 1, 0, False, 1, seed, sentences)(5).wv, brown.parent / "eval")
        print(json.dumps({"library": library, "seed": seed, **scores}), flush=True)
