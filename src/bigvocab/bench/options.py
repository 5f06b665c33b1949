"""The ``bigvocab bench`` command-line options and the entry point the CLI calls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bigvocab.bench.harness.config import BenchConfig, parse_patterns, parse_sizes
from bigvocab.bench.harness.journal import JOURNAL_NAME
from bigvocab.bench.report import recommendation_lines, summary_table
from bigvocab.bench.runner import run_bench
from bigvocab.bench.suites.distributed import run_distributed_bench
from bigvocab.outputs.factory import output_variants, reference_output


def example_patterns() -> str:
    """An ``--outputs`` value made of registered names: the reference layer and every declared
    form of the first layer that declares variants (``full,hsm*``)."""
    varied = next((name for _, name, options in output_variants() if options), None)
    return reference_output() + (f",{varied}*" if varied else "")


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser`` (the CLI's ``bench`` sub-parser)."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        dest="bench_mode",
        action="store_const",
        const="quick",
        help="the default: V in {10k, 100k}, small quality runs; under 10 minutes on 2 CPU cores",
    )
    mode.add_argument(
        "--full",
        dest="bench_mode",
        action="store_const",
        const="full",
        help="the long run: V up to 1M, bigger quality runs",
    )
    mode.add_argument(
        "--ann",
        dest="bench_mode",
        action="store_const",
        const="ann",
        help="approximate top-10 instead: recall and speed-up of each index kind at V = 1M (--outputs picks kinds)",
    )
    mode.add_argument(
        "--retrieval",
        dest="bench_mode",
        action="store_const",
        const="retrieval",
        help="P@1, P@5, recall@10, PSP@5 of the retrieval objectives against training time on a planted task "
        "(--vocab-sizes: item counts, default 100k,1M; --outputs picks rows); PECOS beside them when installed",
    )
    parser.set_defaults(bench_mode="quick")
    parser.add_argument(
        "--ann-weights",
        default="clustered",
        metavar="clustered|fitted|PATH",
        help=f"with --ann: synthetic clustered weights (default), a {reference_output()} layer fitted to the test "
        "rows, or the output layer of a checkpoint queried with its corpus's test hidden states",
    )
    parser.add_argument(
        "--outputs",
        metavar="PATTERNS",
        help=f"comma-separated names or fnmatch patterns of the rows to run, e.g. '{example_patterns()}' (default: "
        f"every registered layer, once per declared variant, and the PyTorch peers; {reference_output()!r} always runs)",
    )
    parser.add_argument("--vocab-sizes", metavar="SIZES", help="comma-separated V for the speed runs, e.g. 10k,100k,1M")
    parser.add_argument("--hidden", type=int, metavar="H", help="hidden size fed to the output layers (default 256)")
    parser.add_argument("--batch", type=int, metavar="N", help="rows per training step (quick 128, full 1024)")
    parser.add_argument("--repeats", type=int, metavar="R", help="paired repetitions per measurement (default 3)")
    parser.add_argument(
        "--num-samples",
        type=int,
        metavar="K",
        help="k for every layer that samples (default: each layer's own, its paper's)",
    )
    parser.add_argument(
        "--reference-budget",
        type=float,
        metavar="SECONDS",
        help="with --retrieval: training seconds after which the reference row stops at its next checkpoint "
        "(default: the 300 s every row has)",
    )
    parser.add_argument(
        "--jobs", type=int, metavar="P", help="with --retrieval: rows trained at once, one process each (default 1)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="T",
        help="with --retrieval: intra-op threads of each row's training (default 1): the times change with it, "
        "the quality after a given number of steps only by rounding",
    )
    parser.add_argument("--device", help="torch device: cpu (default) or cuda[:i]")
    parser.add_argument("--seed", type=int, help="seed of data, weights and samples (default 0)")
    parser.add_argument(
        "--out", type=Path, default=Path("bench-out"), metavar="DIR", help="where the files go (default bench-out/)"
    )
    parser.add_argument(
        "--corpus",
        metavar="SPEC",
        help="your corpus, any spec 'bigvocab train --corpus' takes (e.g. text:notes.txt): the quality runs and "
        "the recommendation are made on it instead of the synthetic language",
    )
    parser.add_argument(
        "--brown", type=Path, metavar="PATH", help="the tagged Brown corpus directory: adds Bengio's Brown quality run"
    )
    piece = parser.add_mutually_exclusive_group()
    piece.add_argument(
        "--resume",
        action="store_true",
        help="continue the unfinished run in --out (same options): only the rows its journal lacks are measured",
    )
    piece.add_argument(
        "--overwrite", action="store_true", help="start afresh over a finished or unfinished run in --out"
    )
    parser.add_argument("--skip-speed", action="store_true", help="no speed, memory or matmul measurements")
    parser.add_argument("--skip-quality", action="store_true", help="no training runs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--distributed",
        type=int,
        metavar="P",
        help="instead of the usual runs: each row's training step on one process and vocabulary-parallel "
        "on P local processes, per-rank peak memory and step time side by side (rows that can be split)",
    )
    parser.add_argument(
        "--word2vec",
        action="store_true",
        help="bigvocab.Word2Vec against gensim: words/s, and WS-353/SimLex/analogy with --brown",
    )


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The preset named by ``--quick``/``--full`` with the options given on top of it."""
    overrides: dict = {}
    if getattr(args, "outputs", None) is not None:
        overrides["outputs"] = parse_patterns(args.outputs)
    if getattr(args, "vocab_sizes", None) is not None:
        overrides["vocab_sizes"] = parse_sizes(args.vocab_sizes)
    for name in ("hidden", "batch", "repeats", "num_samples", "device", "seed", "brown", "corpus"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    overrides["out"] = getattr(args, "out", Path("bench-out"))
    overrides["skip_speed"] = bool(getattr(args, "skip_speed", False))
    overrides["skip_quality"] = bool(getattr(args, "skip_quality", False))
    overrides["progress"] = not getattr(args, "no_progress", False)
    preset = BenchConfig.full if getattr(args, "bench_mode", "quick") == "full" else BenchConfig.quick
    return preset(**overrides)


def main(args: argparse.Namespace) -> int:
    """Run ``bigvocab bench`` as parsed into ``args``; print the table and where the files are."""
    if getattr(args, "word2vec", False):
        from bigvocab.bench.suites.word2vec import run_word2vec_bench

        run_word2vec_bench(args.brown, args.out, args.repeats or 3)
        return 0
    if getattr(args, "bench_mode", None) == "ann":
        from bigvocab.bench.suites.ann import main as ann_main

        return ann_main(args)
    if getattr(args, "bench_mode", None) == "retrieval":
        from bigvocab.bench.suites.retrieval import main as retrieval_main

        return retrieval_main(args)
    config = config_from_args(args)
    if getattr(args, "distributed", None) is not None:
        for path in run_distributed_bench(config, args.distributed, stream=sys.stdout):
            print(f"wrote {path}")
        return 0
    try:
        results = run_bench(config, stream=sys.stdout, resume=args.resume, overwrite=args.overwrite)
    except KeyboardInterrupt as error:  # Ctrl-C or SIGTERM: say what was kept and how to go on
        journal = None if config.out is None else Path(config.out) / JOURNAL_NAME
        if journal is None or not journal.exists():
            raise
        raise type(error)(
            f"the rows finished so far are kept in {str(journal)!r}; run the same command with --resume to continue"
        ) from None
    print(f"\nsummary ({results['wall_seconds']:.0f} s):\n{summary_table(results)}")
    for line in recommendation_lines(results.get("recommendation", [])):
        print(f"recommendation: {line}")
    for path in results.get("files", []):
        print(f"wrote {path}")
    for note in results.get("notes", []):
        print(f"note: {note}")
    return 0
