"""One bench training step (H = 256, N = 1024, SGD, 2 threads) of ``sampled`` (k = 1024 shared
samples) and ``target`` (tau = 1024), their loss composed from torch operations (the code before)
or fused (this checkout), on the same layer in one process, alternating; medians of 15 steps,
3 rounds. First the losses alone, forward and backward, on (1024, 1024) logits.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/sampled-loss-fused/ab.py V [V ...]
"""
import sys
import time
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs.sampled import SampledSoftmax
from bigvocab.outputs.sampling import accidental_hits, sampled_softmax_loss
from bigvocab.outputs.target import TargetSampling
from bigvocab.samplers.base import log_expected_count

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

N, H = 1024, 256


def composed_sampled_loss(self, hidden, target, context):
    """``SampledSoftmax._loss`` before the fused loss (commit 04ff061)."""
    sampled, num_draws = self._draw(hidden.shape[0], unique=self.unique)
    target_logit, sampled_logit = self.target_and_class_logits(hidden, target, sampled)
    if self.remove_accidental_hits:
        sampled_logit = sampled_logit.masked_fill(accidental_hits(target, sampled), float("-inf"))
    target_count = log_expected_count(self.sampler.log_q(target), num_draws, unique=self.unique)
    sampled_count = log_expected_count(self.sampler.log_q(sampled), num_draws, unique=self.unique)
    logits = torch.cat([(target_logit - target_count).unsqueeze(1), sampled_logit - sampled_count], dim=1)
    self._observe(target)
    return torch.logsumexp(logits, dim=1) - logits[:, 0]


def composed_target_loss(self, hidden, target, context):
    """``TargetSampling._loss`` before ``F.cross_entropy`` (commit 04ff061)."""
    vocabulary, position = self.partition_vocabulary(target)
    logits = self.class_logits(hidden, vocabulary)
    if self.inclusion_correction:
        num_distinct = int(position.max()) + 1 if target.numel() else 0
        logits = logits - self.log_inclusion(vocabulary, target.numel(), num_distinct)
    return torch.logsumexp(logits, dim=1) - logits.gather(1, position.unsqueeze(1)).squeeze(1)




def loss_alone() -> None:
    generator = torch.Generator().manual_seed(0)
    target_logit = torch.randn(N, generator=generator, requires_grad=True)
    sampled_logit = torch.randn(N, 1024, generator=generator, requires_grad=True)
    target_count, sampled_count = torch.randn(N, generator=generator), torch.randn(1024, generator=generator)
    hits = torch.randint(0, 5000, (N, 1), generator=generator) == torch.randint(0, 5000, (1, 1024), generator=generator)

    def composed():
        logits = torch.cat([(target_logit - target_count).unsqueeze(1),
                            sampled_logit.masked_fill(hits, float("-inf")) - sampled_count], dim=1)
        (torch.logsumexp(logits, dim=1) - logits[:, 0]).sum().backward()

    def fused():
        sampled_softmax_loss(target_logit, sampled_logit, target_count, sampled_count, hits).sum().backward()

    logits = torch.randn(N, 1024, generator=generator, requires_grad=True)
    position = torch.randint(0, 1024, (N,), generator=generator)

    def target_composed():
        (torch.logsumexp(logits, dim=1) - logits.gather(1, position.unsqueeze(1)).squeeze(1)).sum().backward()

    def target_cross_entropy():
        torch.nn.functional.cross_entropy(logits, position, reduction="none").sum().backward()

    for round_ in range(3):
        print(f"loss alone, round {round_ + 1}: sampled composed {median_ms(composed, 15):.2f} ms, fused "
              f"{median_ms(fused, 15):.2f} ms; target composed {median_ms(target_composed, 15):.2f} ms, "
              f"cross_entropy {median_ms(target_cross_entropy, 15):.2f} ms", flush=True)


def main() -> None:
    torch.set_num_threads(2)
    loss_alone()
    for vocab in map(int, sys.argv[1:]):
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
        for name, cls, composed in (("sampled", SampledSoftmax, composed_sampled_loss),
                                    ("target", TargetSampling, composed_target_loss)):
            layer = create_output(name, H, vocab, counts=counts)
            optimizer = make_optimizer(layer)
            fused = cls._loss
            for round_ in range(3):
                times = {}
                for label, loss in (("composed", composed), ("fused", fused)):
                    cls._loss = loss
                    times[label] = median_ms(lambda: training_step(layer, optimizer, work), 15)
                cls._loss = fused
                print(f"V={vocab} {name} round {round_ + 1}: composed {times['composed']:.2f} ms, "
                      f"fused {times['fused']:.2f} ms, {times['composed'] / times['fused']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
