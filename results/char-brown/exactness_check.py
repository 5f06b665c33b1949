"""On the trained Brown char model: the V probabilities of a hidden state sum to one (the whole
trie, level by level), log_prob along one spelling equals log_softmax gathered, and topk's
branch-and-bound search returns the same words as the full distribution, with its cost.

    OMP_NUM_THREADS=1 PYTHONPATH=src python results/char-brown/exactness_check.py RUN/best.pt BROWN_DIR
"""
import sys
import time

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus

torch.set_num_threads(1)
model, vocab, _ = load_model(sys.argv[1])
corpus = load_corpus(f"brown-bengio:{sys.argv[2]}")
batch = next(model.batches(corpus.test, 64, train=False))
layer = model.output
print(layer)
with torch.no_grad():
    hidden = model.features(batch).double()
    layer.double()
    start = time.perf_counter()
    log_p = layer.log_softmax(hidden)
    full_seconds = time.perf_counter() - start
    print("sum of p over V, max |1 - sum|:", float((log_p.exp().sum(1) - 1).abs().max()))
    path = layer.log_prob(hidden, batch["target"])
    print("log_prob vs log_softmax gathered, max diff:", float((path - log_p.gather(1, batch["target"][:, None]).squeeze(1)).abs().max()))
    start = time.perf_counter()
    values, ids = layer.topk(hidden, 10)
    search_seconds = time.perf_counter() - start
    ref_values, ref_ids = log_p.topk(10, dim=1)
    print("topk ids equal:", bool(torch.equal(ids, ref_ids)), "max value diff:", float((values - ref_values).abs().max()))
    print(f"64 rows: whole-trie log_softmax {full_seconds:.2f} s, top-10 search {search_seconds:.2f} s")
