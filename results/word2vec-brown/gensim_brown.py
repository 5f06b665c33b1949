"""Cross-check: gensim Word2Vec on the same Brown training split that `bigvocab train --corpus brown:...`
uses (80% of the words, case kept), evaluated with bigvocab's evaluators.

usage: python gensim_brown.py sg|cbow neg|hs [sentences|stream] [lower]
  sentences: gensim's own input, one sentence a list (windows stop at sentence ends, rare words dropped)
  stream:    bigvocab's stream as gensim input: </s> and <unk> kept as tokens, 10,000-token chunks
"""
import os, sys, time
import numpy as np
from gensim.models import Word2Vec
from bigvocab.data.corpora import load_corpus
from bigvocab.evaluate import WordVectors, evaluate_analogies, evaluate_similarity

DATA = os.environ.get("DATA", "../shared/data")
E = f"{DATA}/eval/"
arch, out, form = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "sentences")
lower = "lower" in sys.argv[4:]
corpus = load_corpus(f"brown:{DATA}/brown", progress=False)
words = corpus.vocab.words
ids = corpus.train.numpy()
eos = corpus.vocab.index("</s>")
toks = [words[i] for i in ids]
if lower:
    toks = [t if t in ("</s>",) else t.lower() for t in toks]
if form == "sentences":
    sents, cur = [], []
    for t in toks:
        if t == "</s>":
            if cur: sents.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur: sents.append(cur)
else:
    from collections import Counter
    c = Counter(toks)
    toks = [t if c[t] >= 5 else "<unk>" for t in toks]
    sents = [toks[i:i + 10000] for i in range(0, len(toks), 10000)]
print(len(sents), "sentences", sum(map(len, sents)), "tokens", flush=True)
start = time.time()
m = Word2Vec(sents, sg=int(arch == "sg"), hs=int(out == "hs"), negative=0 if out == "hs" else 5,
             vector_size=100, window=5, min_count=5, sample=1e-3, alpha=0.025, min_alpha=0.0001,
             epochs=int(os.environ.get("EPOCHS", "5")), workers=1, seed=int(os.environ.get("SEED", "1")))
secs = time.time() - start
vec = WordVectors(list(m.wv.index_to_key), m.wv.vectors)
a = evaluate_analogies(vec, E + "questions-words.txt", 30000)
w = evaluate_similarity(vec, E + "wordsim353.tsv")
s = evaluate_similarity(vec, E + "simlex999.txt")
print(f"gensim {arch}+{out} {form}{' lower' if lower else ''}: vocab {len(vec)}, {secs:.1f} s | WS353 {w.spearman:.4f} ({w.pairs}) | "
      f"SimLex {s.spearman:.4f} ({s.pairs}) | analogy {a.accuracy:.4f} ({a.correct}/{a.total}, {a.skipped} skipped)")
