"""Bengio et al.'s (2003) Brown protocol: one run per output layer and seed, then the table.

Every run of a model has the same data, optimiser, epochs and stopping rule; only the output layer
differs (the rows are ``rows.txt`` beside this file). Runs already finished are kept, so the
command can be repeated after an interruption. Each run uses one thread.

    python benchmarks/brown/run.py PATH/TO/brown RUNS                  # every row, seeds 0 1 2
    python benchmarks/brown/run.py PATH/TO/brown RUNS --rows full,nce --seeds 0,1
    python benchmarks/brown/run.py PATH/TO/brown RUNS --table-only     # the table of the runs in RUNS

It writes ``RUNS/table.md`` (mean ± sample std over the seeds of the exact test perplexity of the
best checkpoint, its ratio to the first row, validation, epochs, time and the test log Z of the
first seed where the layer has a single normaliser) and ``RUNS/runs.csv`` (one line per run).
``--corpus SPEC`` replaces ``brown-bengio:DIR`` (e.g. a tiny synthetic corpus for a smoke test),
and every ``--train-opt`` is added to each ``bigvocab train`` command.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

import torch

from bigvocab.checkpoint import load_model
from bigvocab.data.corpora import load_corpus
from bigvocab.errors import ConfigError
from bigvocab.evaluate import log_normaliser_stats

HERE = Path(__file__).resolve().parent

#: The model options of the protocol, identical for every output layer.
PROTOCOLS = {
    "nnlm": "--model nnlm --context 4 --hidden-dim 100 --embedding-dim 30 --no-direct --batch-size 256",
    "lstm": "--model lstm --layers 2 --hidden-dim 200 --embedding-dim 200 --dropout 0.2 --bptt 35 "
    "--batch-size 20 --clip-norm 5",
}
TRAINING = "--optimizer adam --lr 0.002 --epochs 8 --patience 1 --no-progress"


def read_rows(path: Path) -> list[tuple[str, str, list[str]]]:
    """(name, model, extra train options) of each line of ``rows.txt``."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, model, *options = line.split()
            rows.append((name, model, options))
    return rows


def run_directory(runs: Path, name: str, seed: int) -> Path:
    return runs / f"brown-nnlm-{name}-s{seed}"


def train(runs: Path, corpus: str, name: str, model: str, options: list[str], seed: int, extra: list[str]) -> None:
    """One ``bigvocab train`` run, its console in ``RUN.log``; a failure is reported, not raised."""
    out = run_directory(runs, name, seed)
    options = [option.replace("{runs}", str(runs)) for option in options]
    command = [
        sys.executable,
        "-m",
        "bigvocab.cli",
        "train",
        *shlex.split(PROTOCOLS[model]),
        "--corpus",
        corpus,
        *shlex.split(TRAINING),
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--overwrite",
        *options,
        *extra,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with open(f"{out}.log", "w") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
    last = Path(f"{out}.log").read_text().strip().splitlines()[-1:] or [""]
    print(f"== {name} seed {seed}: {'ok' if done.returncode == 0 else 'failed, see ' + str(out) + '.log'}: {last[0]}")


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.1f} (1 seed)"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def table(runs: Path, names: list[str]) -> tuple[list[str], list[dict]]:
    """The Markdown table of the runs found for ``names``, and one CSV row per run."""
    lines = [
        "| run | model | output layer | seeds | test ppl (mean ± std) | vs first row | "
        "best valid ppl (epoch) per seed | epochs per seed | train s per seed (device) | "
        "test log Z mean ± std (first seed) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    records: list[dict] = []
    reference = None
    corpus = None
    for name in names:
        folders = sorted(runs.glob(f"brown-nnlm-{name}-s*/summary.json"), key=lambda p: p.parent.name)
        if not folders:
            lines.append(f"| {name} | | | 0 | not run | | | | | |")
            continue
        summaries = [json.loads(p.read_text()) for p in folders]
        devices = [json.loads((p.parent / "config.json").read_text()).get("device", "cpu") for p in folders]
        seeds = [p.parent.name.rsplit("-s", 1)[1] for p in folders]
        log_z = "n/a (checkpoint not kept)"
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
        valid = ", ".join(
            f"{s['best_valid_ppl']:.1f} ({s['best_epoch']})" if s["best_valid_ppl"] else "n/a" for s in summaries
        )
        epochs = ", ".join(f"{s['epochs_completed']}{'*' if s.get('stopped_early') else ''}" for s in summaries)
        times = ", ".join(f"{s['train_seconds']:.0f} ({d})" for s, d in zip(summaries, devices))
        lines.append(
            f"| {name} | {summaries[0]['model']} | {summaries[0]['output']} | {','.join(seeds)} | "
            f"{mean_std(tests)} | {statistics.mean(tests) / reference:.2f}x | {valid} | {epochs} | "
            f"{times} | {log_z} |"
        )
        for seed, summary, device in zip(seeds, summaries, devices):
            records.append(
                {
                    "run": name,
                    "seed": int(seed),
                    "model": summary["model"],
                    "output": summary["output"],
                    "test_ppl": round(summary["test_ppl"], 4),
                    "best_valid_ppl": summary["best_valid_ppl"],
                    "best_epoch": summary["best_epoch"],
                    "epochs": summary["epochs_completed"],
                    "stopped_early": summary["stopped_early"],
                    "steps": summary["steps"],
                    "train_seconds": round(summary["train_seconds"], 1),
                    "device": device,
                }
            )
    lines += ["", "Epochs marked * stopped early (no better validation perplexity for `--patience` epochs)."]
    return lines, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("brown", help="the tagged Brown corpus directory (ignored with --corpus)")
    parser.add_argument("runs", type=Path, help="where the runs and the table go")
    parser.add_argument("--rows", help="comma-separated row names of rows.txt (default: every row)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--corpus", help="a corpus spec instead of brown-bengio:BROWN")
    parser.add_argument("--train-opt", action="append", default=[], help="an option added to every run (repeatable)")
    parser.add_argument("--table-only", action="store_true", help="only write the table of the runs in RUNS")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = read_rows(HERE / "rows.txt")
    if args.rows:
        wanted = args.rows.split(",")
        unknown = sorted(set(wanted) - {name for name, _, _ in rows})
        if unknown:
            parser.error(f"unknown rows {unknown} (rows.txt has {', '.join(name for name, _, _ in rows)})")
        rows = [row for row in rows if row[0] in wanted]
    args.runs.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus or f"brown-bengio:{Path(args.brown).resolve()}"
    if not args.table_only:
        for name, model, options in rows:
            for seed in (int(s) for s in args.seeds.split(",")):
                if not (run_directory(args.runs, name, seed) / "summary.json").is_file():
                    train(args.runs, corpus, name, model, options, seed, args.train_opt)
    lines, records = table(args.runs, [name for name, _, _ in rows])
    (args.runs / "table.md").write_text("\n".join(lines) + "\n")
    with open(args.runs / "runs.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(records[0]) if records else ["run"])
        writer.writeheader()
        writer.writerows(records)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
