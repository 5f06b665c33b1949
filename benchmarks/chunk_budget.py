"""The exact softmax's forward and backward (``chunked_logsumexp``, as ``full`` trains) under
several chunk budgets, paired and alternating in one process, thread CPU time.

    python benchmarks/chunk_budget.py --vocab 1M --hidden 32 --budgets 0,524288,262144 --rounds 2

A budget of 0 is the default (no ``max_chunk_elements``: what ``full`` runs). Prints each
budget's classes per chunk, its time in every round and the least of them. Thread CPU time
rather than wall time, since on a shared machine the wall clock counts the other processes too.
"""

from __future__ import annotations

import argparse
import time

import torch

from bigvocab.bench.harness.config import parse_size
from bigvocab.outputs.functional import chunked_logsumexp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=parse_size, default=parse_size("1M"), help="V, e.g. 200k or 1M")
    parser.add_argument("--hidden", type=int, default=32, help="H (default 32, the retrieval bench's)")
    parser.add_argument("--batch", type=int, default=1024, help="N (default 1024)")
    parser.add_argument("--budgets", default="0,524288", help="comma-separated logits per chunk; 0: the default")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    weight = (0.1 * torch.randn(args.vocab, args.hidden, generator=generator)).requires_grad_()
    bias = torch.zeros(args.vocab, requires_grad=True)
    hidden = torch.randn(args.batch, args.hidden, generator=generator, requires_grad=True)
    target = torch.randint(0, args.vocab, (args.batch,), generator=generator)
    budgets = [int(text) for text in args.budgets.split(",")]
    seconds: dict[int, list[float]] = {budget: [] for budget in budgets}
    for _ in range(args.rounds):
        for budget in budgets:
            weight.grad = bias.grad = hidden.grad = None
            start = time.thread_time()
            log_z, logit = chunked_logsumexp(
                hidden, weight, bias, target, max_chunk_elements=budget or None, equal_row_weights=True
            )
            (log_z - logit).mean().backward()
            seconds[budget].append(time.thread_time() - start)
    print(f"N x H x V = {args.batch} x {args.hidden} x {args.vocab:,}, {args.threads} thread(s), thread CPU s:")
    for budget, times in seconds.items():
        name = "default" if budget == 0 else f"{budget} logits ({max(1, budget // args.batch)} classes)"
        print(f"  {name:<28} " + " ".join(f"{t:.3f}" for t in times) + f"  least {min(times):.3f}")


if __name__ == "__main__":
    main()
