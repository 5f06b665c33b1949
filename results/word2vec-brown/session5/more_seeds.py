"""Skip-gram + neg on Brown, bigvocab against gensim for more seeds than the bench's three: is
WS-353's gap at seeds 1-3 (0.294-0.295 against 0.296-0.299) systematic or the draw of the seeds?
The bench's own quality runs (5 epochs, one thread, the same sentences and evaluators), one JSON
line per (library, seed) as it finishes.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python results/word2vec-brown/session5/more_seeds.py ../shared/data/brown 4 5 6
"""
import json
import sys
from pathlib import Path

from bigvocab.bench import word2vec as bench

brown = Path(sys.argv[1])
sentences = bench.brown_sentences(brown)
for seed in map(int, sys.argv[2:]):
    for library in ("bigvocab", "gensim"):
        scores = bench._scores(bench._trainer(library, 1, 0, False, 1, seed, sentences)(5).wv, brown.parent / "eval")
        print(json.dumps({"library": library, "seed": seed, **scores}), flush=True)
