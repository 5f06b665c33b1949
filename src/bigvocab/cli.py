"""``bigvocab list|train|eval|export|bench``: the command-line tool.

Parsing lives here; the work is done by library functions (``load_corpus``, ``build_model``,
``Trainer``, ``perplexity``, ``WordVectors``, ``bigvocab.bench.main``). Every error a user can
cause -- a :class:`BigvocabError`, a missing file, a bad option, Ctrl-C -- ends the command with
one line ``bigvocab: error: ...`` on stderr and exit status 2, and no command writes anything
before its inputs have been checked.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from bigvocab.errors import BigvocabError, ConfigError, DataError

EXIT_ERROR = 2

CORPUS_FORMS = (
    ("synthetic[:vocab_size=V,num_classes=K,tokens=N,seed=S]", "the embedded synthetic language (the default)"),
    ("text:PATH", "one whitespace-tokenised sentence a line, split 80/10/10 by lines"),
    ("dir:PATH", "train/valid/test files (train.txt, ptb.train.txt or wiki.train.tokens ...)"),
    ("brown:PATH", "the tagged Brown corpus, tags stripped, split 80/10/10 by words"),
    ("brown-bengio:PATH", "Brown as in Bengio et al. (2003): 800k/200k/rest words, rare words -> <unk>"),
    ("text8:PATH", "Mahoney's text8, split 90/5/5 by words"),
)

#: CLI option dest -> model option; only the options given reach the model.
MODEL_OPTIONS = ("context", "embedding_dim", "hidden_dim", "direct", "num_layers", "dropout", "bptt",
                 "tie_weights", "vector_size", "window", "sample", "cbow_mean", "sparse")
OUTPUT_OPTIONS = ("num_samples", "sampler", "ns_exponent", "tree", "cutoffs", "div_value")
#: dest -> TrainConfig field.
TRAIN_OPTIONS = ("epochs", "batch_size", "optimizer", "lr", "momentum", "weight_decay", "lr_schedule", "lr_decay",
                 "min_lr", "clip_norm", "patience", "seed", "device", "log_every", "max_steps", "checkpoint_every")
#: Options that may be given with --resume (see bigvocab.train.RESUME_OVERRIDES).
RESUMABLE = ("epochs", "max_steps", "device", "log_every", "patience", "checkpoint_every")


TRAIN_EXAMPLES = """examples:
  bigvocab train --model nnlm --output full --corpus synthetic:vocab_size=2000,tokens=200000 --epochs 5 --out runs/nnlm
  bigvocab train --model nnlm --output full --corpus brown-bengio:data/brown --epochs 10 --out runs/x
  bigvocab train --model lstm --output adaptive --cutoffs 2000,10000 --corpus dir:data/ptb --optimizer adam --lr 1e-3 --out runs/lstm
  bigvocab train --model skipgram --output neg --negative 5 --corpus text8:data/text8 --out runs/sg
  bigvocab train --model cbow --output hsm --tree huffman --corpus brown:data/brown --out runs/cbow-hs
      (skipgram and cbow default to gensim's settings: --output neg --lr 0.025 --lr-schedule linear
       --min-lr 1e-4 --optimizer sgd --epochs 5 --min-count 5 --patience 0, and for --output hsm
       --output-opt bias=false --output-opt zero_init=true; any of them can be given)
  bigvocab train --out runs/nnlm --resume --epochs 20      (continue a run, here to 20 epochs)
"""
EVAL_EXAMPLES = """examples:
  bigvocab eval --checkpoint runs/x/best.pt
  bigvocab eval --checkpoint runs/x/best.pt --corpus text:other.txt --split test
  bigvocab eval --checkpoint runs/selfnorm/best.pt --log-normaliser      (how close log Z stays to 0)
  bigvocab eval --checkpoint runs/sg/best.pt --skip-perplexity --analogy data/eval/questions-words.txt \\
      --similarity data/eval/wordsim353.tsv --similarity data/eval/simlex999.txt
"""
EXPORT_EXAMPLES = """examples:
  bigvocab export --checkpoint runs/sg/best.pt --format word2vec --out vectors.txt
  bigvocab export --checkpoint runs/sg/best.pt --format word2vec --binary --out vectors.bin
"""
LIST_EXAMPLES = """examples:
  bigvocab list
"""
BENCH_EXAMPLES = """examples:
  bigvocab bench --quick
  bigvocab bench --outputs 'full,hsm*,sampled' --vocab-sizes 10k,100k --out bench-out
  bigvocab bench --full --brown data/brown
"""


class UsageError(Exception):
    """An argparse error, raised instead of argparse's print-and-exit."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


# ---------------------------------------------------------------------------------- value types
def checked_number(parse: Callable[[str], Any], accept: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``parse`` the text and keep values ``accept`` allows. Text that does not
    parse gets the same message as a rejected value, so the user sees what was expected."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return value

    return convert


positive_int = checked_number(int, lambda value: value >= 1, "a positive integer")
nonnegative_int = checked_number(int, lambda value: value >= 0, "a non-negative integer")
positive_float = checked_number(float, lambda value: math.isfinite(value) and value > 0, "a positive number")
nonnegative_float = checked_number(float, lambda value: math.isfinite(value) and value >= 0, "a number >= 0")


def int_list(text: str) -> list[int]:
    try:
        return [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, e.g. 2000,10000; got {text!r}") from None


def parse_value(text: str) -> Any:
    """``--output-opt`` values: int, float, true/false, none, or comma lists of those; else a string."""
    if "," in text:
        return [parse_value(item) for item in text.split(",") if item.strip()]
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def key_value(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, got {text!r}")
    return key.strip().replace("-", "_"), parse_value(value.strip())


# ---------------------------------------------------------------------------------- parser
def build_parser() -> Parser:
    from bigvocab.train import LR_SCHEDULES, OPTIMIZERS, TrainConfig

    parser = Parser(
        prog="bigvocab",
        description="Large-vocabulary output layers behind one interface: train, evaluate, export, benchmark.",
        epilog="examples:\n  bigvocab list\n  bigvocab train --model nnlm --output full --epochs 3 --out runs/x\n"
        "  bigvocab eval --checkpoint runs/x/best.pt\n\nrun 'bigvocab COMMAND --help' for a command's options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)

    def command(name: str, help_text: str, examples: str, handler: Callable, **kwargs) -> Parser:
        sub = commands.add_parser(name, help=help_text, description=help_text, epilog=examples,
                                  formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
        sub.set_defaults(handler=handler)
        return sub

    command("list", "list output layers, samplers, models, optimisers and corpus specs", LIST_EXAMPLES, run_list)

    train = command("train", "train a model and report its exact test perplexity", TRAIN_EXAMPLES, run_train)
    group = train.add_argument_group("model")
    group.add_argument("--model", help="nnlm, lstm, skipgram, cbow or cw (see 'bigvocab list')")
    group.add_argument("--context", type=positive_int, help="nnlm: context words (n-1)")
    group.add_argument("--embedding-dim", type=positive_int, metavar="N", help="nnlm, lstm, cw: embedding size")
    group.add_argument("--hidden-dim", type=positive_int, metavar="N", help="nnlm, lstm, cw: hidden size")
    group.add_argument("--direct", action=argparse.BooleanOptionalAction, help="nnlm: direct input-output connections")
    group.add_argument("--layers", dest="num_layers", type=positive_int, metavar="N", help="lstm: layers")
    group.add_argument("--dropout", type=nonnegative_float, metavar="P", help="lstm: dropout probability")
    group.add_argument("--bptt", type=positive_int, metavar="N", help="lstm: truncated-BPTT length")
    group.add_argument("--tie", dest="tie_weights", action=argparse.BooleanOptionalAction,
                       help="lstm: tie input and output embeddings")
    group.add_argument("--vector-size", type=positive_int, metavar="N", help="skipgram, cbow: vector size")
    group.add_argument("--window", type=positive_int, metavar="N", help="skipgram, cbow, cw: window")
    group.add_argument("--sample", type=nonnegative_float, metavar="T", help="skipgram, cbow: subsampling threshold")
    group.add_argument("--cbow-mean", action=argparse.BooleanOptionalAction, help="cbow: mean (not sum) of context")
    group.add_argument("--sparse", action=argparse.BooleanOptionalAction, help="sparse embedding gradients")
    group.add_argument("--model-opt", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                       help="any other model option (repeatable)")

    group = train.add_argument_group("output layer")
    group.add_argument("--output", help="output layer (default full; neg for skipgram and cbow; see 'bigvocab list')")
    group.add_argument("--num-samples", "--negative", dest="num_samples", type=positive_int, metavar="K",
                       help="samples per example or step (sampling layers); --negative is gensim's name for neg")
    group.add_argument("--sampler", help="proposal of a sampling layer (uniform, unigram, log_uniform, ...)")
    group.add_argument("--ns-exponent", type=nonnegative_float, metavar="P",
                       help="neg: power of its unigram sampler (default 0.75)")
    group.add_argument("--tree", help="hsm: huffman, balanced, random, class or clustered (with --tree-vectors)")
    group.add_argument("--tree-vectors", type=Path, metavar="PATH",
                       help="hsm --tree clustered: the word vectors to cluster (Mnih & Hinton 2008), a "
                       "'bigvocab train' checkpoint (.pt) or a word2vec file (.bin binary, else text)")
    group.add_argument("--cutoffs", type=int_list, metavar="LIST", help="adaptive, dsoftmax: e.g. 2000,10000")
    group.add_argument("--div-value", type=positive_float, metavar="F", help="adaptive, dsoftmax: size ratio of bands")
    group.add_argument("--output-opt", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                       help="any other output-layer option, e.g. power=0.75 (repeatable)")

    group = train.add_argument_group("corpus")
    group.add_argument("--corpus", metavar="SPEC", help="corpus spec (default synthetic; see 'bigvocab list')")
    group.add_argument("--min-count", type=positive_int, metavar="N", help="rarer training words become <unk>")
    group.add_argument("--max-vocab", type=positive_int, metavar="N", help="bound on the vocabulary size")

    defaults = TrainConfig()
    group = train.add_argument_group("training")
    group.add_argument("--epochs", type=positive_int, help=f"passes over the data (default {defaults.epochs})")
    group.add_argument("--batch-size", type=positive_int, metavar="N", help=f"default {defaults.batch_size}")
    group.add_argument("--optimizer", help=f"{', '.join(OPTIMIZERS)} (default {defaults.optimizer})")
    group.add_argument("--lr", type=positive_float, help=f"learning rate (default {defaults.lr})")
    group.add_argument("--momentum", type=nonnegative_float, help=f"momentum, nesterov (default {defaults.momentum})")
    group.add_argument("--weight-decay", type=nonnegative_float, metavar="L2", help="L2 penalty (default 0)")
    group.add_argument("--lr-schedule", help=f"{', '.join(LR_SCHEDULES)} (default plateau; linear for cw)")
    group.add_argument("--lr-decay", type=positive_float, metavar="F",
                       help=f"factor of the exponential and plateau schedules (default {defaults.lr_decay})")
    group.add_argument("--min-lr", type=nonnegative_float, metavar="LR", help=f"default {defaults.min_lr}")
    group.add_argument("--clip-norm", type=positive_float, metavar="F", help="clip the gradient norm")
    group.add_argument("--patience", type=nonnegative_int, metavar="N",
                       help=f"stop after N epochs without a better valid perplexity; 0: never (default {defaults.patience})")
    group.add_argument("--seed", type=nonnegative_int, help="default 0")
    group.add_argument("--device", help="cpu (default), cuda, cuda:1 ...")
    group.add_argument("--log-every", type=positive_int, metavar="N", help=f"steps between metrics events (default {defaults.log_every})")
    group.add_argument("--max-steps", type=positive_int, metavar="N", help="stop after N optimiser steps")
    group.add_argument("--checkpoint-every", type=positive_int, metavar="N", help="also save last.pt every N steps")
    group.add_argument("--workers", type=positive_int, metavar="N",
                       help="skipgram, cbow with neg or hsm: threads of the compiled engine (default 1)")
    group.add_argument("--no-progress", action="store_true", help="no progress bar")
    group.add_argument("--skip-perplexity", action="store_true",
                       help="no validation or test perplexity (for word vectors: exact evaluation of neg over the "
                            "whole vocabulary can cost more than training); no best.pt, no early stopping")

    group = train.add_argument_group("run directory")
    group.add_argument("--out", required=True, metavar="DIR", help="where checkpoints, metrics and summary.json go")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue the run in DIR from its last.pt")
    mode.add_argument("--overwrite", action="store_true", help="replace a run already in DIR")

    evaluate = command("eval", "exact perplexity of a checkpoint, and word-vector benchmarks", EVAL_EXAMPLES, run_eval)
    evaluate.add_argument("--checkpoint", required=True, metavar="PATH", help="a best.pt or last.pt")
    evaluate.add_argument("--corpus", metavar="SPEC", help="default: the corpus the model was trained on")
    evaluate.add_argument("--split", choices=("train", "valid", "test"), default="test", help="default test")
    evaluate.add_argument("--batch-size", type=positive_int, default=512, metavar="N", help="default 512")
    evaluate.add_argument("--device", default="cpu", help="default cpu")
    evaluate.add_argument("--skip-perplexity", action="store_true", help="only the word-vector benchmarks")
    evaluate.add_argument("--log-normaliser", action="store_true",
                          help="also the mean and spread of log Z over the split (full, sampling and "
                          "self-normalising layers): how self-normalised the model is")
    evaluate.add_argument("--analogy", metavar="FILE", help="questions-words file: 3CosAdd accuracy")
    evaluate.add_argument("--similarity", action="append", default=[], metavar="FILE",
                          help="word-pair file (WordSim-353, SimLex-999): Spearman correlation (repeatable)")
    evaluate.add_argument("--restrict-vocab", type=positive_int, default=30000, metavar="N",
                          help="analogies use the N most frequent words (default 30000)")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar")

    export = command("export", "write a checkpoint's word vectors to a file", EXPORT_EXAMPLES, run_export)
    export.add_argument("--checkpoint", required=True, metavar="PATH")
    export.add_argument("--format", choices=("word2vec",), default="word2vec", help="default word2vec")
    export.add_argument("--binary", action="store_true", help="binary word2vec format (default text)")
    export.add_argument("--out", required=True, metavar="FILE")
    export.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")

    # bench owns its options: they are parsed by its own parser in run_bench_command
    command("bench", "benchmark every output layer on this machine (see 'bigvocab bench --help')",
            BENCH_EXAMPLES, run_bench_command, add_help=False)
    return parser


# ---------------------------------------------------------------------------------- list
def run_list(args: argparse.Namespace, extra: Sequence[str]) -> int:
    import bigvocab.models  # noqa: F401  (registers the models)
    from bigvocab.registry import MODELS, OUTPUTS, SAMPLERS
    from bigvocab.train import LR_SCHEDULES, OPTIMIZERS

    for title, registry in (("output layers", OUTPUTS), ("samplers", SAMPLERS), ("models", MODELS)):
        print(f"{title}:")
        for name in registry.names():
            doc = (registry.get(name).__doc__ or "").strip().splitlines()
            print(f"  {name:<12} {doc[0] if doc else ''}")
    print(f"optimizers: {', '.join(OPTIMIZERS)}")
    print(f"lr schedules: {', '.join(LR_SCHEDULES)}")
    print("corpus specs (--corpus):")
    for form, text in CORPUS_FORMS:
        print(f"  {form:<56} {text}")
    return 0


# ---------------------------------------------------------------------------------- train
def _given(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def _train_config(args: argparse.Namespace, needs_output: bool):
    from bigvocab.train import TrainConfig

    options = _given(args, TRAIN_OPTIONS)
    if options.get("patience") == 0:
        options["patience"] = None
    options.setdefault("lr_schedule", "plateau" if needs_output else "linear")
    return TrainConfig(progress=not args.no_progress, **options)


def _resume_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The options given with --resume; any that would change the run itself is refused."""
    fixed = [name for name in (*MODEL_OPTIONS, *OUTPUT_OPTIONS, *TRAIN_OPTIONS, "model", "output", "corpus",
                               "tree_vectors", "min_count", "max_vocab") if name not in RESUMABLE and getattr(args, name) is not None]
    fixed += ["model_opt"] * bool(args.model_opt) + ["output_opt"] * bool(args.output_opt)
    if fixed:
        flags = ", ".join("--" + name.replace("_", "-") for name in fixed)
        allowed = ", ".join("--" + name.replace("_", "-") for name in RESUMABLE)
        raise ConfigError(f"--resume continues the stored run; {flags} cannot change (only {allowed}, --no-progress)")
    overrides = _given(args, RESUMABLE)
    if overrides.get("patience") == 0:
        overrides["patience"] = None
    return {**overrides, "progress": not args.no_progress}


def run_train(args: argparse.Namespace, extra: Sequence[str]) -> int:
    import bigvocab.models  # noqa: F401  (registers the models)
    from bigvocab.checkpoint import atomic_write_text, build_from_meta, load_checkpoint
    from bigvocab.data.corpora import load_corpus
    from bigvocab.data.vocab import Vocab
    from bigvocab.models.word2vec import WORD2VEC_MODELS
    from bigvocab.registry import MODELS
    from bigvocab.train import TrainConfig, check_out_dir
    from bigvocab.word2vec.trainer import configure as configure_engine

    out = Path(args.out)
    check_out_dir(out, resume=args.resume, overwrite=args.overwrite)
    progress = not args.no_progress
    if args.resume:
        overrides = _resume_overrides(args)
        meta = load_checkpoint(out / "last.pt").get("meta") or {}
        if "corpus" not in meta:
            raise ConfigError(f"{str(out / 'last.pt')!r} was not written by 'bigvocab train'; it cannot be resumed here")
        corpus = load_corpus(meta["corpus"], vocab=Vocab.from_dict(meta["vocab"]), progress=progress)
        model, _ = build_from_meta(meta)
        trainer_class = _trainer_class(model, TrainConfig.from_dict(load_checkpoint(out / "last.pt")["config"]), args)
        trainer = trainer_class.resume(out, model, corpus.train, _valid_ids(args, corpus), **overrides)
    else:
        if not args.model:
            raise ConfigError("--model is required (one of: " + ", ".join(MODELS.names()) + ")")
        model_class = MODELS.get(args.model)
        output_defaults = _apply_word2vec_defaults(args) if args.model in WORD2VEC_MODELS else {}
        model_kwargs = {**_given(args, MODEL_OPTIONS), **dict(args.model_opt)}
        model_class.make_config(**model_kwargs)  # checks the model options before a long corpus read
        config = _train_config(args, model_class.needs_output)
        spec = args.corpus or "synthetic"
        corpus = load_corpus(spec, min_count=args.min_count, max_size=args.max_vocab, progress=progress)
        meta = {
            "model": args.model,
            "output": args.output or ("full" if model_class.needs_output else None),
            "model_kwargs": model_kwargs,
            "output_kwargs": {**output_defaults, **_given(args, OUTPUT_OPTIONS), **dict(args.output_opt)},
            "corpus": spec,
            "corpus_options": {"min_count": args.min_count, "max_size": args.max_vocab},
            "vocab": corpus.vocab.to_dict(),
            "seed": config.seed,
        }
        if args.tree_vectors is not None or meta["output_kwargs"].get("tree") == "clustered":
            meta["output_kwargs"]["tree"] = _clustered_tree(args, corpus.vocab).to_dict()
            meta["tree_vectors"] = str(args.tree_vectors)
        model, _ = build_from_meta(meta)
        trainer = _trainer_class(model, config, args)(model, corpus.train, _valid_ids(args, corpus), config,
                                                      out_dir=out, meta=meta, overwrite=args.overwrite)
    configure_engine(trainer, args.workers, corpus.vocab)
    start = time.perf_counter()
    result = trainer.fit()
    summary = _summarise(trainer, corpus, result, out, time.perf_counter() - start, args.skip_perplexity)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(_summary_line(summary))
    return 0


def _clustered_tree(args: argparse.Namespace, vocab):
    """Mnih & Hinton's tree over ``vocab`` from the vectors in ``--tree-vectors``. The built tree
    (not the path) goes into the checkpoint's meta, so eval and resume never need the file again."""
    from bigvocab.evaluate import load_word_vectors
    from bigvocab.outputs.trees import clustered_tree

    if args.output != "hsm" or args.tree != "clustered":
        raise ConfigError("--tree-vectors goes with --output hsm --tree clustered")
    if args.tree_vectors is None:
        raise ConfigError("--tree clustered needs --tree-vectors PATH: word vectors over this vocabulary, e.g. the "
                          "best.pt of a run with another output layer, or a word2vec file (Mnih & Hinton 2008)")
    vectors, missing = load_word_vectors(args.tree_vectors).aligned_to(vocab.words)
    if missing:
        print(f"note: {missing:,} of {len(vocab):,} words have no vector in {str(args.tree_vectors)!r}; "
              "they are clustered at the mean vector", file=sys.stderr)
    return clustered_tree(vectors)


def _trainer_class(model, config, args: argparse.Namespace):
    """The compiled word2vec engine's trainer where it applies, else the torch Trainer."""
    from bigvocab.train import Trainer
    from bigvocab.word2vec.trainer import EngineTrainer, engine_applies

    reason = engine_applies(model, config)
    if reason is not None and args.workers is not None:
        raise ConfigError(f"--workers sets the threads of the word2vec engine, which cannot train this run: {reason}")
    return Trainer if reason is not None else EngineTrainer


def _valid_ids(args: argparse.Namespace, corpus):
    return None if args.skip_perplexity else corpus.valid


def _apply_word2vec_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """Fill the options the user left unset with gensim's defaults (``WORD2VEC_DEFAULTS`` in
    bigvocab.models.word2vec); returns the output layer's word2vec options (the user's
    ``--output-opt`` still override them)."""
    from bigvocab.models.word2vec import WORD2VEC_DEFAULTS, WORD2VEC_OUTPUT_DEFAULTS

    synthetic = (args.corpus or "synthetic").partition(":")[0] == "synthetic"
    for name, value in WORD2VEC_DEFAULTS.items():
        # the synthetic language keeps all its words and refuses a min_count
        if getattr(args, name) is None and not (name == "min_count" and synthetic):
            setattr(args, name, value)
    return dict(WORD2VEC_OUTPUT_DEFAULTS.get(args.output, {}))


def _summarise(trainer, corpus, result: dict, out: Path, seconds: float, skip_perplexity: bool) -> dict[str, Any]:
    """Exact test perplexity of the best checkpoint (the last one when no epoch was validated)."""
    from bigvocab.checkpoint import find_best_or_last, load_checkpoint
    from bigvocab.evaluate.perplexity import perplexity

    model = trainer.model
    chosen = find_best_or_last(out)
    model.load_state_dict(load_checkpoint(chosen)["model"])
    has_output = getattr(model, "output", None) is not None
    test_ppl = perplexity(model, corpus.test, trainer.config.batch_size) if has_output and not skip_perplexity else None
    floor = corpus.floor_perplexity
    return {
        "model": trainer.meta.get("model"),
        "output": trainer.meta.get("output"),
        "corpus": trainer.meta.get("corpus"),
        "vocab_size": len(corpus.vocab),
        "parameters": sum(p.numel() for p in model.parameters()),
        "test_ppl": test_ppl,
        "perplexity_skipped": skip_perplexity,
        "floor_ppl": floor,
        "test_ppl_over_floor": test_ppl / floor if (test_ppl is not None and floor) else None,
        "best_valid_ppl": result["best_valid_ppl"],
        "best_epoch": result["best_epoch"],
        "epochs_completed": result["epochs_completed"],
        "stopped_early": result["stopped_early"],
        "steps": result["steps"],
        "tokens": result["tokens"],
        "train_seconds": result["elapsed"],
        "seconds_this_call": seconds,
        "checkpoint": str(chosen),
    }


def _summary_line(summary: dict[str, Any]) -> str:
    name = summary["model"] + (f"+{summary['output']}" if summary["output"] else "")
    if summary["test_ppl"] is None:
        why = "--skip-perplexity" if summary["perplexity_skipped"] else "model without an output layer"
        quality = f"no perplexity ({why})"
    else:
        quality = f"test ppl {summary['test_ppl']:.2f}"
        if summary["floor_ppl"]:
            quality += f" (floor {summary['floor_ppl']:.2f}, x{summary['test_ppl_over_floor']:.3f})"
    best = summary["best_valid_ppl"]
    valid = f"best valid ppl {best:.2f} at epoch {summary['best_epoch']}" if best is not None else "not validated"
    stop = ", stopped early" if summary["stopped_early"] else ""
    return (f"{name} on {summary['corpus']}: {quality} | {valid} | {summary['epochs_completed']} epochs{stop}, "
            f"{summary['steps']:,} steps, {summary['train_seconds']:.1f} s | {summary['checkpoint']}")


# ---------------------------------------------------------------------------------- eval
def run_eval(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from bigvocab.checkpoint import load_model
    from bigvocab.data.corpora import load_corpus
    from bigvocab.evaluate import (
        WordVectors,
        evaluate_analogies,
        evaluate_similarity,
        log_normaliser_stats,
        perplexity_from,
        total_log_prob,
    )
    from bigvocab.train import resolve_device

    if args.log_normaliser and args.skip_perplexity:
        raise ConfigError("--log-normaliser goes with the perplexity pass; drop --skip-perplexity")
    for path in filter(None, [args.analogy, *args.similarity]):
        if not Path(path).is_file():
            raise DataError(f"evaluation file {path!r} does not exist")
    model, vocab, checkpoint = load_model(args.checkpoint, resolve_device(args.device))
    meta = checkpoint.get("meta") or {}
    if not args.skip_perplexity:
        if getattr(model, "output", None) is None:
            print(f"perplexity: n/a (model {meta.get('model')!r} has no output layer)")
        else:
            spec = args.corpus or meta.get("corpus")
            if not spec:
                raise ConfigError("the checkpoint does not name its corpus; pass --corpus")
            corpus = load_corpus(spec, vocab=vocab, progress=not args.no_progress)
            total, count = total_log_prob(model, getattr(corpus, args.split), args.batch_size,
                                          progress=not args.no_progress)
            print(f"{args.split} perplexity: {perplexity_from(total, count):.3f} ({count:,} targets of {spec})")
            if args.log_normaliser:
                stats = log_normaliser_stats(model, getattr(corpus, args.split), args.batch_size,
                                             progress=not args.no_progress)
                print(f"{args.split} log Z: mean {stats.mean:.4f}, std {stats.std:.4f}, max |log Z| "
                      f"{stats.max_abs:.4f} ({stats.count:,} contexts)")
    if args.analogy or args.similarity:
        vectors = WordVectors(vocab.words, model.word_vectors())
        if args.analogy:
            result = evaluate_analogies(vectors, args.analogy, args.restrict_vocab)
            print(f"analogy {Path(args.analogy).name}: accuracy {result.accuracy:.4f} ({result.correct:,}/{result.total:,};"
                  f" semantic {result.semantic_accuracy:.4f}, syntactic {result.syntactic_accuracy:.4f};"
                  f" {result.skipped:,} skipped, out of the {args.restrict_vocab:,} most frequent words)")
        for path in args.similarity:
            result = evaluate_similarity(vectors, path)
            print(f"similarity {Path(path).name}: spearman {result.spearman:.4f} "
                  f"({result.pairs:,} pairs, {result.skipped:,} skipped)")
    return 0


# ---------------------------------------------------------------------------------- export
def run_export(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from bigvocab.checkpoint import load_model
    from bigvocab.evaluate import WordVectors

    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ConfigError(f"{str(out)!r} exists; pass --overwrite to replace it")
    model, vocab, _ = load_model(args.checkpoint)
    vectors = WordVectors(vocab.words, model.word_vectors())
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        vectors.save_word2vec_format(tmp, binary=args.binary)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    kind = "binary" if args.binary else "text"
    print(f"wrote {len(vectors):,} vectors of dimension {vectors.dim} to {out} ({kind} word2vec format)")
    return 0


# ---------------------------------------------------------------------------------- bench
def run_bench_command(args: argparse.Namespace, extra: Sequence[str]) -> int:
    import bigvocab.bench
    from bigvocab.bench.options import add_bench_arguments

    parser = Parser(prog="bigvocab bench", description="Benchmark every registered output layer on this machine.",
                    epilog=BENCH_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_bench_arguments(parser)
    return bigvocab.bench.main(parser.parse_args(list(extra)))


# ---------------------------------------------------------------------------------- entry point
def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command in ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and args.command != "bench":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.handler(args, extra)
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else 0
    except (UsageError, BigvocabError) as error:
        return _fail(str(error))
    except OSError as error:  # a missing file, permissions, a directory where a file should be, a full disk
        return _fail(f"{error.strerror or error}: {error.filename}" if error.filename else str(error))
    except KeyboardInterrupt:
        return _fail("interrupted (a training run can continue with --resume from its last checkpoint)")


def _fail(message: str) -> int:
    print(f"bigvocab: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
