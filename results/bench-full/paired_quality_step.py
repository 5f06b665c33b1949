"""Paired check: do the quality rows of two code revisions train as many tokens in the same time?

The binary ``hsm`` rows of this run saw 0.73-0.80x the tokens that the 2026-11-28 run's piece 3
(``results/bench-full-2026-11-28``, code 8d6958e, another machine) saw, and every V = 10k row fewer
than that run's. This trains one candidate's V = 100k (or ``--vocab 10k``) quality row exactly as
``bench --full`` does, but for ``--seconds`` with one checkpoint on 2,000 test tokens, alternately
with each revision's source tree (a fresh process each, ``PYTHONPATH`` set to it), so that the
machine's drift falls on both alike, and prints tokens per training second.

    python results/bench-full/paired_quality_step.py \
        --tree old=/work/old8d/src --tree new=/work/benchrun31/src --label 'hsm[huffman]' --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import dataclasses, json, sys
from bigvocab.bench.config import BenchConfig
from bigvocab.bench.quality import corpus_side_data, new_row, quality_tasks, train_and_evaluate
from bigvocab.bench.selection import candidate_by_label
from bigvocab.data.corpora import load_corpus
label, seconds, task_index = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
config = BenchConfig.full()
quality = dataclasses.replace(config.quality, budget_seconds=seconds, checkpoints=(1.0,), test_tokens=2000)
config = dataclasses.replace(config, quality=quality)
task = quality_tasks(config)[task_index]
corpus = load_corpus(task.spec, progress=False)
train_ids = corpus.train[: task.train_tokens]
candidate = candidate_by_label(label)
row = new_row(task.name, candidate, corpus, train_ids, config)
train_and_evaluate(row, candidate, corpus, train_ids, corpus_side_data(corpus, seed=config.seed), config)
print(json.dumps({"tokens": row.tokens_seen, "seconds": row.train_seconds, "test_ppl": row.test_ppl, "note": row.error}))
"""


def run_once(source: str, label: str, seconds: float, task_index: int) -> dict:
    env = dict(os.environ, PYTHONPATH=source)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, label, str(seconds), str(task_index)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=SRC_DIR, two or more")
    parser.add_argument("--label", default="hsm[huffman]")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab", choices=("10k", "100k"), default="100k", help="the synthetic corpus")
    args = parser.parse_args()
    trees = [tree.split("=", 1) for tree in args.tree]
    rates: dict[str, list[float]] = {name: [] for name, _ in trees}
    for round_index in range(args.rounds):
        # Alternate which tree goes first, so neither always follows a warm page cache.
        order = trees if round_index % 2 == 0 else trees[::-1]
        for name, source in order:
            result = run_once(source, args.label, args.seconds, 0 if args.vocab == "10k" else 1)
            rate = result["tokens"] / result["seconds"]
            rates[name].append(rate)
            print(f"round {round_index} {name:>6}: {result['tokens']:>9,} tokens in {result['seconds']:.1f} s = "
                  f"{rate:,.0f} tokens/s, test ppl {result['test_ppl']:.1f} {result['note'] or ''}", flush=True)
    reference = trees[0][0]
    for name, _ in trees:
        mean = sum(rates[name]) / len(rates[name])
        ratio = mean / (sum(rates[reference]) / len(rates[reference]))
        print(f"{name:>6}: mean {mean:,.0f} tokens/s over {len(rates[name])} runs, {ratio:.3f}x {reference}'s")


if __name__ == "__main__":
    main()
