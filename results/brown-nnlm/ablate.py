"""Small ablations for the Brown table's output layers (issue 12), in seconds to minutes each.

A 2-word-context NNLM (embeddings 32, tanh hidden 64) on a small corpus, trained with Adam (or
SGD) for a few epochs, then the exact test perplexity and mean test log Z. Each LAYER is
``name`` or ``name:{json options}`` for ``bigvocab.create_output``; ``power`` builds a unigram
sampler with that exponent, and ``target-jean`` is target sampling with Jean et al.'s
consecutive partitions (batches accumulate until τ distinct targets), for comparison only.

Usage:
    python results/brown-nnlm/ablate.py [--epochs 2] [--sgd LR] [--seeds 0 1] SPEC LAYER [LAYER ...]
e.g.
    python results/brown-nnlm/ablate.py synthetic:vocab_size=5000,tokens=200000 full \\
        'target:{"num_samples": 256, "correction": false}' 'nce:{"shared": true}'
"""
from __future__ import annotations

import argparse
import json
import math
import time

import torch
from torch import Tensor, nn

import bigvocab
from bigvocab.data.corpora import load_corpus
from bigvocab.outputs.target import TargetSampling
from bigvocab.samplers.base import log_expected_count
from bigvocab.samplers.unigram import UnigramSampler


class JeanPartitions(TargetSampling):
    """Target sampling whose partition grows over consecutive batches up to τ distinct targets
    (stateful, so not the library's layer), with the same optional inclusion correction."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.partition = torch.empty(0, dtype=torch.long)
        self.partition_tokens = 0

    def _loss(self, hidden: Tensor, target: Tensor) -> Tensor:
        vocabulary = torch.unique(torch.cat([self.partition, target]))
        if vocabulary.numel() > self.num_samples and self.partition.numel():
            vocabulary, self.partition_tokens = torch.unique(target), 0
        self.partition, self.partition_tokens = vocabulary, self.partition_tokens + target.numel()
        logits = self.class_logits(hidden, vocabulary)
        if self.correction:
            logits = logits - log_expected_count(self.log_q[vocabulary], self.partition_tokens, unique=True)
        position = torch.searchsorted(vocabulary, target)
        return torch.logsumexp(logits, 1) - logits.gather(1, position[:, None]).squeeze(1)


class SmallNNLM(nn.Module):
    def __init__(self, vocab_size: int, output: nn.Module, context: int = 2) -> None:
        super().__init__()
        self.context = context
        self.embedding = nn.Embedding(vocab_size, 32, sparse=True)
        self.hidden = nn.Linear(context * 32, 64)
        self.output = output

    def features(self, words: Tensor) -> Tensor:
        return torch.tanh(self.hidden(self.embedding(words).flatten(1)))


def examples(ids: Tensor, context: int) -> tuple[Tensor, Tensor]:
    return torch.stack([ids[i : len(ids) - context + i] for i in range(context)], 1), ids[context:]


@torch.no_grad()
def evaluate(model: SmallNNLM, ids: Tensor) -> tuple[float, float]:
    """(exact perplexity, mean log Z) on ``ids``."""
    words, targets = examples(ids, model.context)
    total, log_z = 0.0, 0.0
    for start in range(0, len(targets), 2048):
        hidden = model.features(words[start : start + 2048])
        total += model.output.log_prob(hidden, targets[start : start + 2048]).sum().item()
        log_z += torch.logsumexp(model.output.logits(hidden), 1).sum().item()
    return math.exp(-total / len(targets)), log_z / len(targets)


def train(corpus, output: nn.Module, *, epochs: int, seed: int, sgd: float | None) -> dict:
    torch.manual_seed(seed)
    model = SmallNNLM(len(corpus.vocab), output)
    sparse = [model.embedding.weight, *output.sparse_parameters()]
    dense = [p for p in model.parameters() if all(p is not q for q in sparse)]
    if sgd:
        optimisers = [torch.optim.SGD(dense, lr=sgd), torch.optim.SGD(sparse, lr=sgd)]
    else:
        optimisers = [torch.optim.Adam(dense, lr=0.002), torch.optim.SparseAdam(sparse, lr=0.002)]
    words, targets = examples(corpus.train, model.context)
    generator = torch.Generator().manual_seed(seed)
    start = time.time()
    for _ in range(epochs):
        order = torch.randperm(len(targets), generator=generator)
        for first in range(0, len(targets), 256):
            batch = order[first : first + 256]
            loss = output.loss(model.features(words[batch]), targets[batch])
            for optimiser in optimisers:
                optimiser.zero_grad()
            loss.backward()
            for optimiser in optimisers:
                optimiser.step()
    ppl, log_z = evaluate(model, corpus.test)
    return {"test_ppl": round(ppl, 1), "log_z": round(log_z, 2), "seconds": round(time.time() - start)}


def build(spec: str, vocab_size: int, counts: list[float]) -> nn.Module:
    name, _, options = spec.partition(":")
    kwargs = json.loads(options) if options else {}
    if "power" in kwargs:
        kwargs["sampler"] = UnigramSampler(vocab_size, counts=counts, power=kwargs.pop("power"))
    if name == "target-jean":
        return JeanPartitions(64, vocab_size, counts=counts, **kwargs)
    return bigvocab.create_output(name, 64, vocab_size, counts=counts, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--sgd", type=float, help="SGD with this learning rate instead of Adam (lr 0.002)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("corpus")
    parser.add_argument("layers", nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(1)
    corpus = load_corpus(args.corpus, progress=False)
    vocab_size = len(corpus.vocab)
    counts = torch.bincount(corpus.train, minlength=vocab_size).double().tolist()
    for spec in args.layers:
        for seed in args.seeds:
            torch.manual_seed(seed)  # the output layer's initialisation
            result = train(corpus, build(spec, vocab_size, counts), epochs=args.epochs, seed=seed, sgd=args.sgd)
            print(json.dumps({"layer": spec, "seed": seed, **result}), flush=True)


if __name__ == "__main__":
    main()
