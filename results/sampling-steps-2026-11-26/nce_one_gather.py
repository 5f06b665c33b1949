"""``nce``'s step with the target and noise rows gathered separately (the code before 35423e1) and
together (after), alternating in one process: 8 rounds of 5 steps each, order swapped every round.

    python nce_one_gather.py V THREADS
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs.nce import NoiseContrastiveEstimation
from bigvocab.samplers.base import log_expected_count

N, H = 1024, 256


def separate_gathers(self, hidden, target, context):
    """The loss as it was: two scorer calls, so two sparse gradients for the weight."""
    noise, num_draws = self._draw(hidden.shape[0])
    log_kq_target = log_expected_count(self.sampler.log_q(target), num_draws, unique=False)
    log_kq_noise = log_expected_count(self.sampler.log_q(noise), num_draws, unique=False)
    delta_target = self.target_logits(hidden, target) - self.log_z - log_kq_target
    delta_noise = self.class_logits(hidden, noise) - self.log_z - log_kq_noise
    self._observe(target)
    return F.softplus(-delta_target) + F.softplus(delta_noise).sum(dim=1)


def main() -> None:
    vocab, threads = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(threads)
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    layer = create_output("nce", H, vocab, counts=counts)
    work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
    optimizer = make_optimizer(layer)
    variants = {"separate": separate_gathers, "one": NoiseContrastiveEstimation._loss}
    times = {name: [] for name in variants}
    for round_ in range(8):
        for name in sorted(variants, reverse=bool(round_ % 2)):
            NoiseContrastiveEstimation._loss = variants[name]
            training_step(layer, optimizer, work)
            for _ in range(5):
                start = time.perf_counter()
                training_step(layer, optimizer, work)
                times[name].append(time.perf_counter() - start)
    before, after = statistics.median(times["separate"]), statistics.median(times["one"])
    print(
        f"nce V={vocab} threads={threads}: separate gathers {before * 1e3:.1f} ms, "
        f"one gather {after * 1e3:.1f} ms, {before / after:.2f}x"
    )


if __name__ == "__main__":
    main()
