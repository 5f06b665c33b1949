"""Does the log-Q correction help in-batch negatives, and is the streaming estimate right?

On ``bench --retrieval``'s planted task, trains ``sampled`` over in-batch candidates three ways --
log-Q with π from Yi et al.'s streaming estimator, log-Q with π from the exact counts, no
correction -- for many epochs, and prints P@1 on the held-out rows at each checkpoint, after the
log-odds between a group's two best labels at the optimum and at the uncorrected optimum. Then reads
the training rows in shuffled epochs of batches, as the Trainer does, through a fresh
:class:`~bigvocab.samplers.StreamingFrequency`, and compares its estimate p̂ with each label's
probability π of being among a batch's positives (from the training rows' label counts), by band
of π. ``docs/design/retrieval-bench.md`` quotes the figures.

    python benchmarks/retrieval_logq.py --items 100k --train-rows 50000 --steps 400
"""

from __future__ import annotations

import argparse

import torch

from bigvocab.bench.harness.config import parse_sizes
from bigvocab.bench.harness.selection import Candidate
from bigvocab.bench.harness.side_data import SideData
from bigvocab.bench.suites.retrieval import RetrievalConfig, RetrievalRow, make_task, train_row
from bigvocab.data.synthetic_xmc import SyntheticXMC
from bigvocab.samplers import StreamingFrequency

FORMS = {
    "log-Q, streaming π": {"candidates": "in_batch", "frequency": "streaming"},
    "log-Q, counts' π": {"candidates": "in_batch", "frequency": "counts"},
    "no correction": {"candidates": "in_batch", "correction": False},
}
BANDS = ((0.5, 1.0), (0.1, 0.5), (0.01, 0.1), (0.0, 0.01))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="100k", help="labels of the planted task (default 100k)")
    parser.add_argument("--train-rows", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--checkpoints", type=int, default=8, help="evaluations, evenly spaced")
    args = parser.parse_args()
    items = parse_sizes(args.items)[0]
    config = RetrievalConfig(
        item_counts=[items],
        train_rows=args.train_rows,
        batch_size=args.batch,
        steps=args.steps,
        budget_seconds=float("inf"),
        checkpoints=tuple((index + 1) / args.checkpoints for index in range(args.checkpoints)),
    )
    task, train, test = make_task(items, config)
    side = SideData(train.label_counts().tolist(), [str(i) for i in range(items)], lambda: torch.empty(0), "none")
    print(f"{items:,} items, {len(train):,} training rows, batch {args.batch}, {args.steps} steps")
    print(f"Bayes-optimal P@1 {task.bayes_precision_at_k(1):.3f}")
    corrected, uncorrected = margins(task, args.batch)
    print(
        f"log-odds of a group's best label over its second, median group: {corrected:.3f} at the optimum, "
        f"{uncorrected:.3f} at the uncorrected in-batch softmax's optimum\n"
    )
    curves = {}
    for label, options in FORMS.items():
        row = RetrievalRow(items, label, "sampled")
        train_row(row, Candidate(label, "sampled", options=options), train, test, side, config)
        curves[label] = row.curve
    steps = [point["steps"] for point in next(iter(curves.values()))]
    print("| P@1 at step | " + " | ".join(f"{s} ({s * args.batch / len(train):.1f} ep.)" for s in steps) + " |")
    print("|---" * (len(steps) + 1) + "|")
    for label, curve in curves.items():
        print(f"| {label} | " + " | ".join(f"{point['P@1']:.3f}" for point in curve) + " |")
    print()
    estimate_table(train.labels, items, args.batch, args.steps)


def margins(task: SyntheticXMC, batch: int) -> tuple[float, float]:
    """The median group's log-odds between its best and second-best label under the optimum (by
    q_y) and under the uncorrected in-batch softmax's optimum (by q_y / π_y, π_y the probability
    that y is among a batch's positives)."""
    within = task.within_group()
    in_row = task.group_prior[task.label_group] * (1 - (1 - within) ** task.draws)
    in_batch = 1 - (1 - in_row) ** batch
    best, second = (within.reshape(-1, task.num_groups)[:2]).unbind(0)
    best_ratio, second_ratio = ((within / in_batch).reshape(-1, task.num_groups)[:2]).unbind(0)
    return float((best / second).log().median()), float((best_ratio / second_ratio).log().median())


def estimate_table(labels: torch.Tensor, items: int, batch: int, steps: int) -> None:
    """log p̂/π by band of π after ``steps`` batches of the rows read in shuffled epochs; π_y =
    1 - (1 - c_y / N)^batch for c_y training rows holding y (N rows)."""
    rows = labels.shape[0]
    holding = torch.zeros(items, dtype=torch.float64)
    listed = labels[labels >= 0]
    holding.index_add_(0, listed, torch.ones(listed.numel(), dtype=torch.float64))
    truth = 1 - (1 - holding / rows) ** batch
    estimator = StreamingFrequency(items)
    generator = torch.Generator().manual_seed(0)
    done = 0
    while done < steps:
        for chunk in torch.randperm(rows, generator=generator).split(batch)[: steps - done]:
            positives = labels[chunk]
            estimator.update(torch.unique(positives[positives >= 0]))
            done += 1
    seen = torch.nonzero(holding > 0).squeeze(1)
    ratio = (estimator.probability(seen) / truth[seen]).log()
    print("| π band | labels | mean log p̂/π | sd |\n|---|---|---|---|")
    for low, high in BANDS:
        band = (truth[seen] >= low) & (truth[seen] < high if high < 1 else truth[seen] <= high)
        if bool(band.any()):
            chosen = ratio[band]
            spread = float(chosen.std()) if chosen.numel() > 1 else 0.0
            print(f"| [{low}, {high}) | {int(band.sum()):,} | {float(chosen.mean()):+.3f} | {spread:.3f} |")


if __name__ == "__main__":
    main()
