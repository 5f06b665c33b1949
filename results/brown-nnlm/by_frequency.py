"""Exact perplexity on a split, broken down by how often each target word occurs in the training
split: which words a row wins or loses on against another (e.g. the LSTM with ``full`` against
``adaptive`` and ``hsm``).

    python results/brown-nnlm/by_frequency.py [--split valid] RUN/best.pt [RUN/best.pt ...]

Buckets by training count: <10 (with <unk>'s own count), 10-99, 100-999, 1000-9999, >=10000. A
row prints, per bucket, the share of the split's targets and the bucket's perplexity.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus
from bigvocab.evaluate.perplexity import eval_batches

EDGES = (10, 100, 1000, 10000)


def bucket_of(counts: torch.Tensor) -> torch.Tensor:
    """Bucket index 0..len(EDGES) of each word from its training count."""
    return torch.bucketize(counts, torch.tensor(EDGES), right=True)


def by_bucket(path: Path, split: str) -> tuple[list[float], list[float], float]:
    """(share of targets, perplexity) per bucket and the overall perplexity of one checkpoint."""
    model, vocab, checkpoint = load_model(path)
    corpus = load_corpus(checkpoint["meta"]["corpus"], vocab=vocab, progress=False)
    buckets = bucket_of(torch.tensor(list(vocab.counts)))
    total = torch.zeros(len(EDGES) + 1, dtype=torch.float64)
    count = torch.zeros(len(EDGES) + 1, dtype=torch.float64)
    # The run's own batch size: for the LSTM it is the number of evaluation streams, which sets
    # how much context each token sees, so the overall figure equals the run's perplexity.
    for batch in eval_batches(model, getattr(corpus, split), checkpoint["config"]["batch_size"]):
        log_probs = model.log_prob(batch).double().reshape(-1)
        which = buckets[batch["target"].reshape(-1)]
        total.index_add_(0, which, log_probs)
        count.index_add_(0, which, torch.ones_like(log_probs))
    shares = (count / count.sum()).tolist()
    ppls = [math.exp(-t / c) if c else math.nan for t, c in zip(total.tolist(), count.tolist())]
    return shares, ppls, math.exp(-float(total.sum()) / float(count.sum()))


def main(paths: list[Path], split: str) -> None:
    torch.set_num_threads(1)
    names = ["<10", "10-99", "100-999", "1000-9999", ">=10000"]
    print(f"| run | {split} ppl | " + " | ".join(f"ppl, count {n}" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    shares = None
    for path in paths:
        shares, ppls, overall = by_bucket(path, split)
        print(f"| {path.parent.name} | {overall:.1f} | " + " | ".join(f"{p:.1f}" for p in ppls) + " |")
    if shares is not None:
        print(f"| share of {split} targets | | " + " | ".join(f"{100 * s:.1f}%" for s in shares) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="valid", choices=["valid", "test"])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    args = parser.parse_args()
    main(args.checkpoints, args.split)
