"""Training steps with the alias table's lookups by ``index_select`` (the library) or by torch's
advanced indexing (``table[ids]``, the code before), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/alias-index-select/ab.py 1000000 nce,neg,sampled   # ab-1m.log
    THP_MEM_ALLOC_ENABLE=1 python results/alias-index-select/ab.py 100000 nce,neg,sampled    # ab-100k.log

Each sampling step draws from the unigram sampler's alias table (two lookups per draw: the
bucket's acceptance and alias) and reads the draws' and targets' probabilities (``log_q``). The
bench's workload (H = 256, N = 1024, Zipf counts and targets, SGD); both variants first draw the
same ids from the same seed; then the bench's own paired timing (``bench.timing``): 20
repetitions of 5 steps per variant, order alternating. Prints each variant's median time per step
and the median (and quartiles) of the repetitions' ratios (above 1: ``index_select`` faster).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer, make_workload
from bigvocab.factory import create_output
from bigvocab.samplers import alias

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import paired_steps, print_pair  # noqa: E402  (results/ab_steps.py)

N, H, ROUNDS, STEPS = 1024, 256, 20, 5


def indexed_sample(self, shape, generator=None):
    num_classes = self.probs.numel()
    bucket = torch.randint(num_classes, shape, generator=generator, device=self.probs.device)
    coin = torch.rand(shape, generator=generator, device=self.probs.device, dtype=torch.float64)
    return torch.where(coin < self.accept[bucket], bucket, self.alias[bucket])


def indexed_log_prob(self, ids):
    return self.probs[ids].log()


LIBRARY = (alias.AliasTable.sample, alias.AliasTable.log_prob)
VARIANTS = {"index_select": LIBRARY, "table[ids]": (indexed_sample, indexed_log_prob)}


def use(name: str) -> None:
    alias.AliasTable.sample, alias.AliasTable.log_prob = VARIANTS[name]


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    for name in names:
        layer = create_output(name, H, vocab, counts=counts)
        work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
        draws = []
        for variant in VARIANTS:
            use(variant)
            draws.append(layer.sampler.sample(4096, generator=torch.Generator().manual_seed(1)))
        assert torch.equal(*draws), "the two lookups must draw the same ids"
        summary = paired_steps(layer, make_optimizer(layer), work, use, "table[ids]", "index_select",
                               repeats=ROUNDS, steps=STEPS)
        print_pair(f"V={vocab} {name}", "table[ids]", "index_select", summary)
        use("index_select")


if __name__ == "__main__":
    main()
