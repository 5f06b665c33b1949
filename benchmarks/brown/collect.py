"""Collect the runs of ``run.sh`` into the markdown table of ``README.md`` in this folder.

Usage: python results/brown-nnlm/collect.py [--reference PPL] RUNS_DIR NAME [NAME ...] > table.md

Each NAME is a row: the runs ``RUNS_DIR/brown-nnlm-NAME-sSEED`` written by ``run.sh``, one per
seed. A row shows the mean and the sample standard deviation over its seeds of the exact test
perplexity, its ratio to the first row's mean (or to ``--reference``, e.g. a ``full`` figure from
runs not at hand), the best validation perplexity and epoch, the
epochs run, the training wall time of each seed with the device it ran on (runs on a lent GPU
came back without their checkpoints), and the exact log normaliser on the test split (mean ± std
over the test contexts of the first seed's run, when its ``best.pt`` is at hand) for the layers
with a single softmax normaliser.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Optional

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus
from bigvocab.errors import ConfigError
from bigvocab.evaluate import log_normaliser_stats


def mean_std(values: list[float], digits: int = 1) -> str:
    """``mean ± std`` (sample std), or the single value with ``(1 seed)``."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def describe(checkpoint: Optional[dict], summary: dict) -> str:
    """The output layer and its options as the run's checkpoint records them (its name alone
    without a checkpoint)."""
    if checkpoint is None:
        return summary["output"]
    meta = checkpoint["meta"]
    options = {k: v for k, v in meta["output_kwargs"].items() if not isinstance(v, dict)}
    tree = meta.get("tree_vectors")
    parts = [f"{k}={v}" for k, v in options.items()] + ([f"clustered from {Path(tree).parent.name}"] if tree else [])
    return summary["output"] + (f" ({', '.join(parts)})" if parts else "")


def main(runs: Path, names: list[str], reference: Optional[float] = None) -> None:
    torch.set_num_threads(1)
    corpus = None
    versus = "vs first row" if reference is None else f"vs {reference:g}"
    print(f"| run | model | output layer | seeds | test ppl (mean ± std) | {versus} | "
          "best valid ppl (epoch) per seed | epochs per seed | train s per seed (device) | "
          "test log Z mean ± std (first seed) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        folders = sorted(runs.glob(f"brown-nnlm-{name}-s*/summary.json"), key=lambda p: p.parent.name)
        if not folders:
            print(f"| {name} | | | 0 | not run | | | | | |")
            continue
        summaries = [json.loads(p.read_text()) for p in folders]
        checkpoint, log_z = None, "n/a (checkpoint not kept)"
        if (folders[0].parent / "best.pt").is_file():
            model, vocab, checkpoint = load_model(folders[0].parent / "best.pt")
            if corpus is None:
                corpus = load_corpus(checkpoint["meta"]["corpus"], vocab=vocab, progress=False)
            try:
                stats = log_normaliser_stats(model, corpus.test, 1024)
                log_z = f"{stats.mean:.2f} ± {stats.std:.2f}"
            except ConfigError:
                log_z = "n/a (no single Z)"
        tests = [s["test_ppl"] for s in summaries]
        reference = reference or statistics.mean(tests)
        valid = ", ".join(f"{s['best_valid_ppl']:.1f} ({s['best_epoch']})" for s in summaries)
        epochs = ", ".join(f"{s['epochs_completed']}{'*' if s.get('stopped_early') else ''}" for s in summaries)
        seeds = ",".join(p.parent.name.rsplit("-s", 1)[1] for p in folders)
        devices = [json.loads((p.parent / "config.json").read_text()).get("device", "cpu") for p in folders]
        times = ", ".join(f"{s['train_seconds']:.0f} ({d})" for s, d in zip(summaries, devices))
        print(
            f"| {name} | {summaries[0]['model']} | {describe(checkpoint, summaries[0])} | {seeds} | "
            f"{mean_std(tests)} | {statistics.mean(tests) / reference:.2f}x | {valid} | {epochs} | "
            f"{times} | {log_z} |"
        )
    print()
    print("Epochs marked * stopped early (no better validation perplexity for `--patience` epochs).")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=float, help="perplexity the 'vs' column divides by")
    parser.add_argument("runs", type=Path)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    main(args.runs, args.names, args.reference)
