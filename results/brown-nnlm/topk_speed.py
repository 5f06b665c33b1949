"""Exact top-10 on *trained* models: each run's output layer against full's, on real contexts.

Usage: python results/brown-nnlm/topk_speed.py RUNS_DIR NAME [NAME ...]

The first NAME is the reference (``full``). For every run the hidden states of the first
``ROWS`` test contexts are computed with its own model, then its ``topk(h, 10)`` and the
reference's ``log_softmax(h).topk(10)`` are timed back to back, ``REPEATS`` times in alternating
order; the table gives the median ratio (reference time / run time) and the range. The benchmark
(``bigvocab bench``) times untrained layers and copies fitted to a few rows; this is the case in
between that decoding meets: a model trained to convergence on real text.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus

ROWS = 1024
REPEATS = 7
K = 10


def hidden_states(model, ids: torch.Tensor) -> torch.Tensor:
    batch = next(iter(model.batches(ids, ROWS, train=False, generator=None)))
    with torch.no_grad():
        return model.features(batch)


def seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main(runs: Path, names: list[str]) -> None:
    torch.set_num_threads(1)
    reference, vocab, checkpoint = load_model(runs / f"brown-nnlm-{names[0]}" / "best.pt")
    corpus = load_corpus(checkpoint["meta"]["corpus"], vocab=vocab, progress=False)
    test = corpus.test[: ROWS + 16]
    reference_hidden = hidden_states(reference, test)
    print(f"| run | top-10 speed-up over full (median [min–max] of {REPEATS}) | run ms / {ROWS} rows | full ms |")
    print("|---|---|---|---|")
    for name in names:
        model, _, _ = load_model(runs / f"brown-nnlm-{name}" / "best.pt")
        hidden = hidden_states(model, test)
        with torch.no_grad():
            ours = model.output.topk(hidden, K)
            exact = model.output.log_softmax(hidden).topk(K, dim=1)
            assert torch.equal(ours[1], exact.indices), f"{name}: top-k differs from the sorted distribution"

            def run() -> float:
                return seconds(lambda: model.output.topk(hidden, K))

            def full() -> float:
                return seconds(lambda: reference.output.log_softmax(reference_hidden).topk(K, dim=1))

            run(), full()
            pairs = []
            for i in range(REPEATS):  # alternate which side goes first
                if i % 2:
                    pairs.append((run(), full()))
                else:
                    first = full()
                    pairs.append((run(), first))
        ratios = [f / r for r, f in pairs]
        print(
            f"| {name} | {statistics.median(ratios):.1f}x [{min(ratios):.1f}–{max(ratios):.1f}] | "
            f"{1e3 * statistics.median(r for r, _ in pairs):.1f} | {1e3 * statistics.median(f for _, f in pairs):.1f} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
