"""Collect the runs of ``run.sh`` into the markdown table of ``README.md`` in this folder.

Usage: python results/brown-nnlm/collect.py RUNS_DIR NAME [NAME ...] > table.md

Each NAME is a run ``RUNS_DIR/brown-nnlm-NAME`` written by ``run.sh``. The test perplexity and
times come from its ``summary.json``; log Z statistics on the test split are computed here from
its ``best.pt`` for the layers with a single softmax normaliser.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus
from bigvocab.errors import ConfigError
from bigvocab.evaluate import log_normaliser_stats


def main(runs: Path, names: list[str]) -> None:
    torch.set_num_threads(1)
    reference = None
    corpus = None
    print("| run | output layer | test ppl | vs full | best valid ppl (epoch) | epochs | train s | test log Z mean ± std |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        folder = runs / f"brown-nnlm-{name}"
        summary = json.loads((folder / "summary.json").read_text())
        model, vocab, checkpoint = load_model(folder / "best.pt")
        if corpus is None:
            corpus = load_corpus(checkpoint["meta"]["corpus"], vocab=vocab, progress=False)
        try:
            stats = log_normaliser_stats(model, corpus.test, 1024)
            log_z = f"{stats.mean:.2f} ± {stats.std:.2f}"
        except ConfigError:
            log_z = "n/a (no single Z)"
        test = summary["test_ppl"]
        reference = reference or test
        options = {k: v for k, v in checkpoint["meta"]["output_kwargs"].items() if not isinstance(v, dict)}
        tree = checkpoint["meta"].get("tree_vectors")
        parts = [f"{k}={v}" for k, v in options.items()] + ([f"clustered from {Path(tree).parent.name}"] if tree else [])
        shown = ", ".join(parts)
        print(
            f"| {name} | {summary['output']}{' (' + shown + ')' if shown else ''} | {test:.1f} | "
            f"{test / reference:.2f}x | {summary['best_valid_ppl']:.1f} ({summary['best_epoch']}) | "
            f"{summary['epochs_completed']}{' (stopped early)' if summary.get('stopped_early') else ''} | "
            f"{summary['train_seconds']:.0f} | {log_z} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
