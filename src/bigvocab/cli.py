"""``bigvocab list|train|eval|export|bench``: the command-line tool.

Parsing lives here; the work is done by library functions (``new_run``, ``resume_run`` and
``train_and_test`` of ``bigvocab.runs``, ``load_corpus``, ``perplexity``, ``WordVectors``,
``bigvocab.bench.main``). Every error a user can cause -- a :class:`BigvocabError`, a missing file,
a bad option -- ends the command with one line ``bigvocab: error: ...`` on stderr and exit status
2, and no command writes anything before its inputs have been checked. SIGINT (Ctrl-C) and
SIGTERM end it with one true line too, and status 130 or 143: during training the step under way
finishes and ``last.pt`` is saved first. Warnings are one ``bigvocab: warning: ...`` line each.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import math
import os
import shutil
import signal
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import bigvocab
import bigvocab.evaluate  # registers the side-input loaders
import bigvocab.models  # registers the models
from bigvocab.checkpoint import VOCABULARY_SIDE_INPUTS
from bigvocab.declarations import Option, merged_help
from bigvocab.errors import BigvocabError, ConfigError, TrainingInterrupted
from bigvocab.files import write_json
from bigvocab.outputs.base import SIDE_INPUTS
from bigvocab.outputs.factory import output_variants, side_input_readers
from bigvocab.registry import CURRICULA, MODELS, OPTIMIZERS, OUTPUTS, SCHEDULES, SIDE_LOADERS

EXIT_ERROR = 2
#: Where `bigvocab list` starts its descriptions.
LIST_COLUMN = 14

#: The dests of the flags generated from what models and output layers declare start with these;
#: the rest of the dest is the option's name (``model.context``, ``output.num_samples``).
MODEL_DEST, OUTPUT_DEST = "model.", "output."
#: Dests of the corpus flags: load_corpus's keywords, stored in a run's ``corpus_options``.
CORPUS_OPTIONS = ("min_count", "max_size")
#: Metavar of a generated flag, by the kind of value its option takes (bigvocab.declarations).
METAVARS: dict[type, str] = {int: "N", float: "X", str: "NAME", list: "LIST", object: "VALUE"}

EVAL_EXAMPLES = """examples:
  bigvocab eval --checkpoint runs/x/best.pt
  bigvocab eval --checkpoint runs/x/best.pt --corpus text:other.txt --split test
  bigvocab eval --checkpoint runs/x/best.pt --log-normaliser      (how close log Z stays to 0)
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


class UsageError(Exception):
    """An argparse error, raised instead of argparse's print-and-exit."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
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
integer = checked_number(int, lambda value: True, "an integer")
finite_float = checked_number(float, math.isfinite, "a finite number")


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


def key_path(text: str) -> tuple[str, str]:
    """``--side KIND=PATH``: the path is kept as written."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"must be KIND=PATH, got {text!r}")
    return key.strip(), value.strip()


#: How a generated flag parses its text, by the kind of value its option takes.
TEXT_TYPES: dict[type, Callable[[str], Any]] = {
    int: integer,
    float: finite_float,
    str: str,
    list: int_list,
    object: parse_value,
}


# ---------------------------------------------------------------------------------- generated flags
def add_declared_flags(
    group, prefix: str, owners: Mapping[str, tuple[Mapping[str, Option], Mapping[str, str]]]
) -> None:
    """One flag for each option the ``owners`` declare (owner name -> (its options, its
    :attr:`flag_aliases`)) whose kind of value can be written as text: ``--num-samples`` for
    ``num_samples``, dest ``prefix + name``, the declared aliases as other spellings, the help of
    every owner that takes it (:func:`~bigvocab.declarations.merged_help`). A flag whose name
    another flag already has is ``--PREFIX-NAME`` (``--output-epochs`` for a layer option
    ``epochs``), without aliases. A flag's value reaches the owner only when it is given."""
    declared: dict[str, tuple[set[type], dict[str, str], list[str]]] = {}
    for owner, (options, aliases) in owners.items():
        for option in options.values():
            if option.kind is None:
                continue
            kinds, helps, spellings = declared.setdefault(option.name, (set(), {}, []))
            kinds.add(option.kind)
            helps[owner] = option.help_with_default()
            alias = aliases.get(option.name)
            if alias is not None and alias not in spellings:
                spellings.append(alias)
    for name, (kinds, helps, spellings) in declared.items():
        kind = kinds.pop() if len(kinds) == 1 else object
        settings: dict[str, Any] = {"dest": prefix + name, "help": merged_help(helps).replace("%", "%%")}
        if kind is bool:
            settings["action"] = argparse.BooleanOptionalAction
        else:
            settings.update(type=TEXT_TYPES[kind], metavar=METAVARS[kind])
        flags = [_flag(name), *map(_flag, spellings)]
        try:
            group.add_argument(*flags, **settings)
        except argparse.ArgumentError:  # the name is taken
            group.add_argument(_flag(prefix.rstrip(".") + "_" + name), **settings)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def model_owners() -> dict[str, tuple[Mapping[str, Option], Mapping[str, str]]]:
    """Every registered model's options and flag aliases, by name."""
    return {name: (MODELS.get(name).declared_options(), MODELS.get(name).flag_aliases) for name in MODELS.names()}


def output_owners() -> dict[str, tuple[Mapping[str, Option], Mapping[str, str]]]:
    """Every registered output layer's options, side inputs left out (``--side`` gives them),
    and its flag aliases, by name."""
    owners: dict[str, tuple[Mapping[str, Option], Mapping[str, str]]] = {}
    for name in OUTPUTS.names():
        layer = OUTPUTS.get(name)
        options = {key: option for key, option in layer.declared_options().items() if key not in SIDE_INPUTS}
        owners[name] = (options, layer.flag_aliases)
    return owners


def declared_values(args: argparse.Namespace, prefix: str) -> dict[str, Any]:
    """The options of the generated flags under ``prefix`` that were given, by option name."""
    return {
        dest[len(prefix) :]: value
        for dest, value in vars(args).items()
        if dest.startswith(prefix) and value is not None
    }


def _output_help() -> str:
    defaults: dict[str, list[str]] = {}
    for name in MODELS.names():
        output = MODELS.get(name).run_defaults().get("output")
        if output is not None:
            defaults.setdefault(output, []).append(name)
    shown = "; ".join(f"{output} for {', '.join(models)}" for output, models in defaults.items())
    return f"output layer (default {shown}; see 'bigvocab list')"


def _side_help() -> str:
    kinds = [
        f"{kind}=PATH: {SIDE_LOADERS.describe(kind)} (read by {', '.join(side_input_readers(kind)) or 'none'})"
        for kind in SIDE_LOADERS.names()
    ]
    given = " and ".join(VOCABULARY_SIDE_INPUTS)
    return (
        f"a side input of the output layer from outside the corpus (repeatable; {given} come from the corpus): "
        + "; ".join(kinds)
    )


def _train_examples(flag_of: Mapping[str, str]) -> str:
    """The examples of ``bigvocab train --help``, made of what the registries declare: the first
    model with an output layer, the first layer with declared forms and one of its forms, and the
    defaults of the models that declare their own (models with the same defaults on one line).
    ``flag_of``: dest -> flag of the train parser."""
    first = next(name for name in MODELS.names() if MODELS.get(name).has_distribution)
    lines = [f"bigvocab train --model {first} --corpus synthetic:vocab_size=2000,tokens=200000 --epochs 5 --out runs/x"]
    forms = [(name, options) for _, name, options in output_variants() if options]
    if forms:
        name, options = forms[0]
        flags = " ".join(_given_as(flag_of, OUTPUT_DEST + key, value) for key, value in options.items())
        lines.append(
            f"bigvocab train --model {first} --output {name} {flags} --corpus brown-bengio:data/brown --out runs/y"
        )
    by_defaults: dict[str, list[str]] = {}
    for model in MODELS.names():
        by_defaults.setdefault(_defaults_text(model, flag_of), []).append(model)
    for shown, models in by_defaults.items():
        if shown:
            lines.append(f"bigvocab train --model {models[0]} --corpus text8:data/text8 --out runs/{models[0]}")
            lines.append(f"    ({', '.join(models)} default to {shown}; any of them can be given)")
    lines.append("bigvocab train --out runs/x --resume --epochs 20      (continue a run, here to 20 epochs)")
    return "examples:\n" + "".join(f"  {line}\n" for line in lines)


def _defaults_text(model: str, flag_of: Mapping[str, str]) -> str:
    """The flags of ``model``'s own run and output-layer defaults ('' when it has none)."""
    model_class = MODELS.get(model)
    defaults = model_class.run_defaults()
    if set(defaults) <= {"output"}:
        return ""
    shown = " ".join(_given_as(flag_of, key, value) for key, value in defaults.items())
    for name in OUTPUTS.names():
        options = model_class.output_defaults(name)
        if options:
            given = " ".join(f"--output-opt {key}={str(value).lower()}" for key, value in options.items())
            shown += f", and for --output {name} {given}"
    return shown


def _given_as(flag_of: Mapping[str, str], dest: str, value: Any) -> str:
    """How the value of ``dest`` is written on the command line (``--tree huffman``, ``--shared``)."""
    flag = flag_of[dest]
    if isinstance(value, bool):
        return flag if value else "--no-" + flag.removeprefix("--")
    return f"{flag} {value}"


def _bench_examples() -> str:
    from bigvocab.bench.options import example_patterns

    return (
        "examples:\n  bigvocab bench --quick\n"
        f"  bigvocab bench --outputs '{example_patterns()}' --vocab-sizes 10k,100k --out bench-out\n"
        "  bigvocab bench --full --brown data/brown\n"
        "  bigvocab bench --full --brown data/brown --resume   (continue that run in bench-out/ after a kill)\n"
    )


# ---------------------------------------------------------------------------------- parser
def build_parser() -> Parser:
    from bigvocab.train import TrainConfig  # importing it registers the optimisers and schedules

    parser = Parser(
        prog="bigvocab",
        description="Large-vocabulary output layers behind one interface: train, evaluate, export, benchmark.",
        epilog="examples:\n  bigvocab list\n  bigvocab train --model nnlm --epochs 3 --out runs/x\n"
        "  bigvocab eval --checkpoint runs/x/best.pt\n\nrun 'bigvocab COMMAND --help' for a command's options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"bigvocab {bigvocab.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)

    def command(name: str, help_text: str, examples: str, handler: Callable, **kwargs) -> Parser:
        sub = commands.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )
        sub.set_defaults(handler=handler)
        return sub

    command("list", "list output layers, samplers, models, optimisers and corpus specs", LIST_EXAMPLES, run_list)

    train = command(
        "train",
        "train a model and report its exact test perplexity",
        "",  # the examples, once every flag exists
        run_train,
        usage="bigvocab train --model NAME --out DIR [options]\n"
        "       bigvocab train --out DIR --resume [--epochs N ...]",
    )
    model_group = train.add_argument_group("model (each model's options, from its config)")
    model_group.add_argument(
        "--model",
        metavar="NAME",
        help=f"required (except with --resume): {', '.join(MODELS.names())} (see 'bigvocab list')",
    )
    model_group.add_argument(
        "--model-opt",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="any model option (repeatable)",
    )
    output_group = train.add_argument_group("output layer (each layer's options, from its constructor)")
    output_group.add_argument("--output", metavar="NAME", help=_output_help())
    output_group.add_argument(
        "--output-opt",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="any output-layer option, e.g. shared=false (repeatable)",
    )
    output_group.add_argument(
        "--side", action="append", type=key_path, default=[], metavar="KIND=PATH", help=_side_help()
    )

    group = train.add_argument_group("corpus")
    group.add_argument("--corpus", metavar="SPEC", help="corpus spec (default synthetic; see 'bigvocab list')")
    group.add_argument("--min-count", type=positive_int, metavar="N", help="rarer training words become <unk>")
    group.add_argument(
        "--max-vocab", dest="max_size", type=positive_int, metavar="N", help="bound on the vocabulary size"
    )

    defaults = TrainConfig()
    group = train.add_argument_group("training")
    group.add_argument("--epochs", type=positive_int, help=f"passes over the data (default {defaults.epochs})")
    group.add_argument("--batch-size", type=positive_int, metavar="N", help=f"default {defaults.batch_size}")
    group.add_argument("--optimizer", help=f"{', '.join(OPTIMIZERS)} (default {defaults.optimizer})")
    group.add_argument("--lr", type=positive_float, help=f"learning rate (default {defaults.lr})")
    group.add_argument("--momentum", type=nonnegative_float, help=f"momentum, nesterov (default {defaults.momentum})")
    group.add_argument("--weight-decay", type=nonnegative_float, metavar="L2", help="L2 penalty (default 0)")
    group.add_argument(
        "--lr-schedule",
        help=f"{', '.join(SCHEDULES)} (default {defaults.lr_schedule}; linear for a run without validation: "
        "a model without a distribution, or --skip-perplexity)",
    )
    group.add_argument(
        "--lr-decay",
        type=positive_float,
        metavar="F",
        help=f"factor of the exponential and plateau schedules (default {defaults.lr_decay})",
    )
    group.add_argument("--min-lr", type=nonnegative_float, metavar="LR", help=f"default {defaults.min_lr}")
    group.add_argument(
        "--clip-norm",
        type=positive_float,
        metavar="F",
        help="clip the gradient norm (fused rows: each parameter's own)",
    )
    group.add_argument(
        "--amsgrad", action="store_true", default=None, help="adam, adamw: AMSGrad's maximum of the second moments"
    )
    group.add_argument(
        "--fused-rows",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="update the output layer's sparse rows inside the backward (sgd, adagrad, adam without weight "
        "decay, CPU; --clip-norm then clips them by their own norm); --no-fused-rows steps them with "
        "torch.optim (default on)",
    )
    group.add_argument(
        "--gradient-noise",
        type=nonnegative_float,
        metavar="ETA",
        help="annealed Gaussian noise added to the gradients, variance ETA / (1 + step)^0.55 "
        "(Neelakantan et al. 2015; default 0: none)",
    )
    group.add_argument(
        "--curriculum",
        metavar="MEASURE",
        help=f"train the first epochs on the easiest part of the corpus, growing to all of it "
        f"(Bengio et al. 2009): {', '.join(CURRICULA)}",
    )
    group.add_argument(
        "--curriculum-epochs",
        type=positive_int,
        metavar="N",
        help=f"epochs of the growing curriculum before the whole corpus (default {defaults.curriculum_epochs})",
    )
    group.add_argument(
        "--averaging",
        help="under torchrun, data parallel: gradients (every step, the default), local-sgd or easgd "
        "(Zhang et al. 2015): each process steps alone and the models meet every --average-every steps",
    )
    group.add_argument(
        "--average-every",
        type=positive_int,
        metavar="N",
        help=f"local-sgd, easgd: steps between model averagings (default {defaults.average_every})",
    )
    group.add_argument(
        "--elastic-alpha",
        type=positive_float,
        metavar="A",
        help="easgd: the elastic moving rate (default 0.9 / processes)",
    )
    group.add_argument(
        "--patience",
        type=nonnegative_int,
        metavar="N",
        help=f"stop after N epochs without a better valid perplexity; 0: never (default {defaults.patience})",
    )
    group.add_argument("--seed", type=nonnegative_int, help="default 0")
    group.add_argument("--device", help="cpu (default), cuda, cuda:1 ...")
    group.add_argument(
        "--log-every",
        type=positive_int,
        metavar="N",
        help=f"steps between metrics events (default {defaults.log_every})",
    )
    group.add_argument("--max-steps", type=positive_int, metavar="N", help="stop after N optimiser steps")
    group.add_argument("--checkpoint-every", type=positive_int, metavar="N", help="also save last.pt every N steps")
    engine_layers = [name for name in OUTPUTS.names() if OUTPUTS.get(name).engine_kind is not None]
    group.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help=f"threads of word2vec's compiled engine, which trains word2vec's models with {' or '.join(engine_layers)} "
        "(default 1)",
    )
    group.add_argument("--no-progress", action="store_true", help="no progress bar")
    group.add_argument(
        "--vocab-parallel",
        action="store_true",
        help="under torchrun: split the output layer's rows over the processes, each seeing every "
        "batch (without it, torchrun trains data parallel: each process on its share of batches)",
    )
    group.add_argument(
        "--skip-perplexity",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="no validation or test perplexity (for word vectors: exact evaluation of a sampled layer over the "
        "whole vocabulary can cost more than training); no best.pt, no early stopping. Default: on for the "
        "models trained for their word vectors (skipgram, cbow), off otherwise; a resumed run keeps its "
        "run's choice unless given",
    )

    group = train.add_argument_group("run directory")
    group.add_argument("--out", required=True, metavar="DIR", help="where checkpoints, metrics and summary.json go")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue the run in DIR from its last.pt")
    mode.add_argument("--overwrite", action="store_true", help="replace a run already in DIR")
    group.add_argument(
        "--allow-changed-corpus",
        action="store_true",
        help="with --resume: go on although the corpus files changed since the run started",
    )
    # after every other flag, so that a model or layer option whose name is taken gets a prefix
    add_declared_flags(model_group, MODEL_DEST, model_owners())
    add_declared_flags(output_group, OUTPUT_DEST, output_owners())
    flag_of = {dest: action.option_strings[0] for dest, action in _flag_actions(train).items()}
    train.set_defaults(flag_of=flag_of)
    train.epilog = _train_examples(flag_of)

    evaluate = command("eval", "exact perplexity of a checkpoint, and word-vector benchmarks", EVAL_EXAMPLES, run_eval)
    evaluate.add_argument("--checkpoint", required=True, metavar="PATH", help="a best.pt or last.pt")
    evaluate.add_argument("--corpus", metavar="SPEC", help="default: the corpus the model was trained on")
    evaluate.add_argument("--split", choices=("train", "valid", "test"), default="test", help="default test")
    evaluate.add_argument(
        "--batch-size",
        type=positive_int,
        metavar="N",
        help="default 512; for a model that carries state along the text (lstm), the run's own batch size, "
        "since its perplexity depends on how many streams the text is cut into",
    )
    evaluate.add_argument("--device", default="cpu", help="default cpu")
    evaluate.add_argument("--skip-perplexity", action="store_true", help="only the word-vector benchmarks")
    evaluate.add_argument(
        "--log-normaliser",
        action="store_true",
        help="also the mean and spread of log Z over the split, for a layer with a single normaliser ("
        + ", ".join(name for name in OUTPUTS.names() if hasattr(OUTPUTS.get(name), "log_normaliser"))
        + "): how self-normalised the model is",
    )
    evaluate.add_argument("--analogy", metavar="FILE", help="questions-words file: 3CosAdd accuracy")
    evaluate.add_argument(
        "--similarity",
        action="append",
        default=[],
        metavar="FILE",
        help="word-pair file (WordSim-353, SimLex-999): Spearman correlation (repeatable)",
    )
    evaluate.add_argument(
        "--restrict-vocab",
        type=positive_int,
        default=30000,
        metavar="N",
        help="analogies use the N most frequent words (default 30000)",
    )
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar")

    export = command("export", "write a checkpoint's word vectors to a file", EXPORT_EXAMPLES, run_export)
    export.add_argument("--checkpoint", required=True, metavar="PATH")
    export.add_argument("--format", choices=("word2vec",), default="word2vec", help="default word2vec")
    export.add_argument("--binary", action="store_true", help="binary word2vec format (default text)")
    export.add_argument("--out", required=True, metavar="FILE")
    export.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")

    # bench owns its options: they are parsed by its own parser in run_bench_command
    command(
        "bench",
        "benchmark every output layer on this machine (see 'bigvocab bench --help')",
        "",  # bench's own parser shows the examples (run_bench_command)
        run_bench_command,
        add_help=False,
    )
    return parser


# ---------------------------------------------------------------------------------- list
def run_list(args: argparse.Namespace, extra: Sequence[str]) -> int:
    import bigvocab.data
    import bigvocab.train  # noqa: F401  (registers the optimisers and schedules)
    from bigvocab.registry import CORPORA, SAMPLERS, SCORERS, TREES

    width = shutil.get_terminal_size((100, 24)).columns
    sections = (
        ("output layers (--output)", OUTPUTS, None),
        ("scorers (--scorer)", SCORERS, None),
        (f"{_takers('tree')} trees (--tree)", TREES, None),
        ("samplers (--sampler)", SAMPLERS, None),
        ("side inputs (--side)", SIDE_LOADERS, None),
        ("models (--model)", MODELS, None),
        ("optimizers (--optimizer)", OPTIMIZERS, None),
        ("lr schedules (--lr-schedule)", SCHEDULES, None),
        ("curriculum measures (--curriculum)", CURRICULA, None),
        ("corpus specs (--corpus)", CORPORA, lambda name: CORPORA.get(name).form),
    )
    for title, registry, label in sections:
        print(f"{title}:")
        for name in registry.names():
            shown = label(name) if label else name
            lines = textwrap.wrap(registry.describe(name), max(40, width - LIST_COLUMN - 2)) or [""]
            if len(shown) >= LIST_COLUMN:  # a long form gets a line of its own
                lines.insert(0, "")
            print(f"  {shown:<{LIST_COLUMN}}{lines[0]}".rstrip())
            for line in lines[1:]:
                print(" " * (LIST_COLUMN + 2) + line)
    return 0


def _takers(option: str) -> str:
    """The registered layers that take ``option``, comma-separated."""
    return ", ".join(name for name in OUTPUTS.names() if option in OUTPUTS.get(name).declared_options())


# ---------------------------------------------------------------------------------- train
def _given(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def _flag_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """dest -> the action of each flag of ``parser``."""
    return {action.dest: action for action in parser._actions if action.option_strings}


def _train_options(args: argparse.Namespace) -> list[str]:
    """The dests of the training flags: the TrainConfig fields that have a flag."""
    from bigvocab.train import TrainConfig

    return [field.name for field in dataclasses.fields(TrainConfig) if field.name in args.flag_of]


def _resumable(args: argparse.Namespace) -> list[str]:
    """The dests of the training flags that may change on --resume (bigvocab.train.RESUME_OVERRIDES
    that have a flag; ``progress`` is --no-progress's)."""
    from bigvocab.train.config import RESUME_OVERRIDES

    return [name for name in RESUME_OVERRIDES if name in args.flag_of]


def _train_config(args: argparse.Namespace, needs_output: bool):
    from bigvocab.train import TrainConfig

    options = _given(args, _train_options(args))
    if options.get("patience") == 0:
        options["patience"] = None
    # plateau follows validation perplexity; a run without one decays linearly instead
    validated = needs_output and not getattr(args, "skip_perplexity", False)
    options.setdefault("lr_schedule", "plateau" if validated else "linear")
    return TrainConfig(progress=not args.no_progress, **options)


def apply_model_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """Fill the run options the user left unset with what the model declares
    (:meth:`~bigvocab.models.base.WordModel.run_defaults`: word2vec's are gensim's), except the
    vocabulary options for a corpus with a fixed vocabulary, which refuses them; returns the
    model's options for the chosen output layer (the user's flags and ``--output-opt`` override them)."""
    from bigvocab.data.corpora import builds_vocabulary

    model_class = MODELS.get(args.model)
    fixed_vocabulary = not builds_vocabulary(args.corpus or "synthetic")
    for name, value in model_class.run_defaults().items():
        if getattr(args, name) is None and not (name in CORPUS_OPTIONS and fixed_vocabulary):
            setattr(args, name, value)
    return model_class.output_defaults(args.output) if args.output is not None else {}


def _stored_values(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """dest -> the value the stored run has for it (what a repeated option must equal): the
    stored TrainConfig's fields, the model and output layer, the corpus options, the side inputs'
    paths, and the model's and the layer's options under the generated flags' dests."""
    meta, config = checkpoint.get("meta") or {}, checkpoint.get("config") or {}
    stored = dict(config)
    stored.update(model=meta.get("model"), output=meta.get("output"), **(meta.get("corpus_options") or {}))
    stored.update({f"side.{kind}": path for kind, path in (meta.get("side") or {}).items()})
    stored.update({MODEL_DEST + key: value for key, value in (meta.get("model_kwargs") or {}).items()})
    stored.update({OUTPUT_DEST + key: value for key, value in (meta.get("output_kwargs") or {}).items()})
    return stored


def _given_run_options(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """dest -> (the option as the user wrote it, its value) of every option given that
    describes the run: flags, ``--model-opt``/``--output-opt`` keys and ``--side`` kinds."""
    given = {
        dest: (flag, getattr(args, dest))
        for dest, flag in args.flag_of.items()
        if dest in (*_train_options(args), "model", "output", *CORPUS_OPTIONS)
        or dest.startswith((MODEL_DEST, OUTPUT_DEST))
    }
    given = {dest: pair for dest, pair in given.items() if pair[1] is not None and dest not in _resumable(args)}
    given.update({MODEL_DEST + key: (f"--model-opt {key}", value) for key, value in args.model_opt})
    given.update({OUTPUT_DEST + key: (f"--output-opt {key}", value) for key, value in args.output_opt})
    given.update({f"side.{kind}": (f"--side {kind}", str(Path(path).resolve())) for kind, path in args.side})
    return given


def _resume_overrides(args: argparse.Namespace, checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The options given with --resume. An option that defines the run is accepted only with the
    value the run already has; any other value is refused."""
    stored = _stored_values(checkpoint)
    given = _given_run_options(args)
    changed = [flag for dest, (flag, value) in given.items() if value != stored.get(dest)]
    if changed:
        allowed = ", ".join(args.flag_of[name] for name in _resumable(args))
        raise ConfigError(
            f"--resume continues the stored run; {', '.join(changed)} cannot change (only {allowed}, "
            "--no-progress; --corpus may name the same files in another place)"
        )
    overrides = _given(args, _resumable(args))
    if overrides.get("patience") == 0:
        overrides["patience"] = None
    return {**overrides, "progress": not args.no_progress}


def run_train(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from bigvocab.checkpoint import load_checkpoint
    from bigvocab.distributed.training import DistributedTraining
    from bigvocab.runs import new_run, resume_run, run_summary, train_and_test
    from bigvocab.train import CLI_SPELLING, RunLock, check_out_dir, resolve_device

    out = Path(args.out)
    # under torchrun: join the run (None in one process); rank 0 alone locks, writes and prints
    distributed = DistributedTraining.from_environment(
        vocab_parallel=args.vocab_parallel, device=resolve_device(args.device or "cpu")
    )
    writes = distributed is None or distributed.writes
    check_out_dir(out, resume=args.resume, overwrite=args.overwrite, spelling=CLI_SPELLING)
    if distributed is not None:  # every rank has checked DIR before rank 0 locks and writes it
        distributed.barrier()
    progress = not args.no_progress and writes
    skipped_why = "--skip-perplexity"
    with contextlib.ExitStack() as lock:  # the run directory's lock, from before its files are read or written
        if args.resume:
            if writes:
                lock.enter_context(RunLock(out, CLI_SPELLING))
            checkpoint = load_checkpoint(out / "last.pt")
            if args.skip_perplexity is None:  # as the run was started
                args.skip_perplexity = not (checkpoint.get("meta") or {}).get("validate", True)
            trainer, corpus = resume_run(
                out,
                checkpoint=checkpoint,
                corpus=args.corpus,
                allow_changed_corpus=args.allow_changed_corpus,
                validate=not args.skip_perplexity,
                spelling=CLI_SPELLING,
                workers=args.workers,
                distributed=distributed,
                **{**_resume_overrides(args, checkpoint), "progress": progress},
            )
        else:
            if not args.model:
                raise ConfigError("--model is required (one of: " + ", ".join(MODELS.names()) + ")")
            if args.allow_changed_corpus:
                raise ConfigError("--allow-changed-corpus goes with --resume")
            model_class = MODELS.get(args.model)
            if args.skip_perplexity is None and model_class.trained_for_vectors:
                args.skip_perplexity = True
                skipped_why = f"{args.model} trains word vectors; --no-skip-perplexity computes it"
            output_defaults = apply_model_defaults(args)
            trainer, corpus = new_run(
                args.model,
                args.output,
                _train_config(args, model_class.has_distribution),
                out,
                corpus=args.corpus or "synthetic",
                model_kwargs={**declared_values(args, MODEL_DEST), **dict(args.model_opt)},
                output_kwargs={**output_defaults, **declared_values(args, OUTPUT_DEST), **dict(args.output_opt)},
                min_count=args.min_count,
                max_size=args.max_size,
                side=dict(args.side),
                validate=not bool(args.skip_perplexity),
                overwrite=args.overwrite,
                progress=progress,
                workers=args.workers,
                spelling=CLI_SPELLING,
                distributed=distributed,
            )
            if writes:
                lock.enter_context(RunLock(out, CLI_SPELLING))
                # again under the lock: another run may have finished in DIR while the corpus was read
                check_out_dir(out, overwrite=args.overwrite, spelling=CLI_SPELLING)
        start = time.perf_counter()
        outcome = train_and_test(trainer, None if args.skip_perplexity else corpus.test)
        summary = run_summary(trainer, corpus, outcome, time.perf_counter() - start)
        if writes:
            write_json(out / "summary.json", summary)
    if writes:
        print(_summary_line(summary, skipped_why))
    if distributed is not None:
        distributed.leave()
    return 0


def _summary_line(summary: dict[str, Any], skipped_why: str = "--skip-perplexity") -> str:
    name = summary["model"] + (f"+{summary['output']}" if summary["output"] else "")
    if summary["test_ppl"] is None:
        why = skipped_why if summary["perplexity_skipped"] else "a model without a normalised distribution"
        quality = f"no perplexity ({why})"
    else:
        quality = f"test ppl {summary['test_ppl']:.2f}"
        if summary["floor_ppl"] and math.isfinite(summary["test_ppl"]):
            quality += f" (floor {summary['floor_ppl']:.2f}, x{summary['test_ppl_over_floor']:.3f})"
    if summary.get("test_metrics"):
        quality += ", " + ", ".join(f"{name} {value:.4f}" for name, value in summary["test_metrics"].items())
    best = summary["best_valid_ppl"]
    valid = f"best valid ppl {best:.2f} at epoch {summary['best_epoch']}" if best is not None else "not validated"
    stop = ", stopped early" if summary["stopped_early"] else ""
    done = f"{summary['tokens']:,} words" if summary.get("steps_are_passes") else f"{summary['steps']:,} steps"
    return (
        f"{name} on {summary['corpus']}: {quality} | {valid} | {summary['epochs_completed']} epochs{stop}, "
        f"{done}, {summary['train_seconds']:.1f} s | {summary['checkpoint']}"
    )


# ---------------------------------------------------------------------------------- eval
def run_eval(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from bigvocab.checkpoint import load_model
    from bigvocab.data.corpora import corpus_fingerprint, fingerprint_difference, load_corpus
    from bigvocab.evaluate import (
        WordVectors,
        check_has_normaliser,
        evaluate_analogies,
        evaluate_retrieval,
        evaluate_similarity,
        log_normaliser_stats,
        perplexity_from,
        read_analogies,
        read_word_pairs,
        total_log_prob,
    )
    from bigvocab.train import resolve_device

    if args.log_normaliser and args.skip_perplexity:
        raise ConfigError("--log-normaliser goes with the perplexity pass; drop --skip-perplexity")
    if args.skip_perplexity and not (args.analogy or args.similarity):
        raise ConfigError(
            "nothing to evaluate: --skip-perplexity leaves only the word-vector benchmarks, and no "
            "--analogy or --similarity file is given"
        )
    # the evaluation files are read first, so a bad one fails before any long pass
    questions = read_analogies(args.analogy) if args.analogy else None
    pair_files = [(path, read_word_pairs(path)) for path in args.similarity]
    model, vocab, checkpoint = load_model(args.checkpoint, resolve_device(args.device))
    meta = checkpoint.get("meta") or {}
    if not args.skip_perplexity:
        if not model.has_distribution:
            print(f"perplexity: n/a (model {meta.get('model')!r} has no normalised distribution)")
        else:
            if args.log_normaliser:
                check_has_normaliser(model)
            spec = args.corpus or meta.get("corpus")
            if not spec:
                raise ConfigError("the checkpoint does not name its corpus; pass --corpus")
            if args.corpus is None and corpus_fingerprint(spec) is None and spec.partition(":")[0] != "synthetic":
                raise ConfigError(
                    f"the checkpoint's corpus {spec!r} does not exist (any more); give its new place with --corpus"
                )
            corpus = load_corpus(spec, vocab=vocab, progress=not args.no_progress)
            changed = fingerprint_difference(meta.get("corpus_fingerprint"), corpus_fingerprint(spec))
            if args.corpus is None and changed:
                warnings.warn(
                    f"the corpus {spec!r} changed since training ({changed}); the perplexity is over "
                    "its files as they are now",
                    stacklevel=2,
                )
            ids = getattr(corpus, args.split)
            batch_size = args.batch_size or _eval_batch_size(model, checkpoint)
            total, count = total_log_prob(model, ids, batch_size, progress=not args.no_progress)
            streams = f", {batch_size} streams" if model.batch_size_shapes_results else ""
            print(
                f"{args.split} perplexity: {perplexity_from(total, count):.3f} ({count:,} targets of {spec}{streams})"
            )
            if model.evaluation == "retrieval":
                metrics = evaluate_retrieval(
                    model, ids, label_counts=vocab.counts, num_examples=len(corpus.train), batch_size=batch_size
                )
                print(f"{args.split} " + ", ".join(f"{name} {value:.4f}" for name, value in metrics.items()))
            if args.log_normaliser:
                stats = log_normaliser_stats(model, ids, batch_size, progress=not args.no_progress)
                print(
                    f"{args.split} log Z: mean {stats.mean:.4f}, std {stats.std:.4f}, max |log Z| "
                    f"{stats.max_abs:.4f} ({stats.count:,} contexts)"
                )
    if questions is not None or pair_files:
        vectors = WordVectors(vocab.words, model.word_vectors())
        if questions is not None:
            result = evaluate_analogies(vectors, questions, args.restrict_vocab)
            searched = min(args.restrict_vocab, len(vectors))
            print(
                f"analogy {Path(args.analogy).name}: accuracy {_share(result.accuracy)} ({result.correct:,}/"
                f"{result.total:,}; semantic {_share(result.semantic_accuracy)}, syntactic "
                f"{_share(result.syntactic_accuracy)}; {result.skipped:,} skipped; answers searched among the "
                f"{searched:,} most frequent of {len(vectors):,} words)"
            )
        for path, pairs in pair_files:
            similarity = evaluate_similarity(vectors, pairs)
            print(
                f"similarity {Path(path).name}: spearman {_share(similarity.spearman)} "
                f"({similarity.pairs:,} pairs, {similarity.skipped:,} skipped)"
            )
    return 0


def _share(value: float) -> str:
    """An accuracy or correlation to 4 places; 'n/a' when nothing was scored (NaN)."""
    return "n/a" if math.isnan(value) else f"{value:.4f}"


# ---------------------------------------------------------------------------------- export
def run_export(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from bigvocab.checkpoint import load_model
    from bigvocab.evaluate import WordVectors

    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ConfigError(f"{str(out)!r} exists; pass --overwrite to replace it")
    model, vocab, _ = load_model(args.checkpoint)
    vectors = WordVectors(vocab.words, model.word_vectors())
    vectors.save_word2vec_format(out, binary=args.binary)
    kind = "binary" if args.binary else "text"
    print(f"wrote {len(vectors):,} vectors of dimension {vectors.dim} to {out} ({kind} word2vec format)")
    return 0


# ---------------------------------------------------------------------------------- bench
def run_bench_command(args: argparse.Namespace, extra: Sequence[str]) -> int:
    import bigvocab.bench
    from bigvocab.bench.options import add_bench_arguments

    parser = Parser(
        prog="bigvocab bench",
        description="Benchmark every registered output layer on this machine.",
        epilog=_bench_examples(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bench_arguments(parser)
    return bigvocab.bench.main(parser.parse_args(list(extra)))


def _eval_batch_size(model: Any, checkpoint: Mapping[str, Any]) -> int:
    """``bigvocab eval``'s batch: 512, or the run's own for a model whose result depends on it."""
    if model.batch_size_shapes_results:
        return int((checkpoint.get("config") or {}).get("batch_size", 512))
    return 512


# ---------------------------------------------------------------------------------- entry point
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command in ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _use_huge_pages()
    with warnings.catch_warnings(), _sigterm_interrupts(), _progress_lines():
        warnings.showwarning = _show_warning
        try:
            parser = build_parser()
            args, extra = parser.parse_known_args(argv)
            if extra and args.command != "bench":
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            return args.handler(args, extra)
        except SystemExit as done:  # --help, --version
            return done.code if isinstance(done.code, int) else 0
        except TrainingInterrupted as stopped:  # asked for, not a failure: no "error:" label
            out = stopped.checkpoint.parent
            name = signal.Signals(stopped.signal_number).name
            where = stopped.position or f"step {stopped.step:,}"
            return _fail(
                f"{name} received: the run stopped at {where} ({stopped.step:,} steps in all) and saved "
                f"{str(stopped.checkpoint)!r}; continue it with 'bigvocab train --out {out} --resume'",
                128 + stopped.signal_number,
                label="interrupted",
            )
        except (UsageError, BigvocabError) as error:
            return _fail(str(error))
        except OSError as error:  # a missing file, permissions, a directory where a file should be
            return _fail(f"{str(error.filename)!r}: {error.strerror or error}" if error.filename else str(error))
        except KeyboardInterrupt as error:
            number = signal.SIGTERM if isinstance(error, _Terminated) else signal.SIGINT
            message = str(error) or f"{number.name} received: stopped; nothing was written"
            return _fail(message, 128 + number, label="interrupted")


def _use_huge_pages() -> None:
    """Ask PyTorch's CPU allocator for transparent huge pages (its own ``THP_MEM_ALLOC_ENABLE``)
    unless the environment already sets the variable.

    A training step at V = 1M allocates GiB-size gradients and blocks afresh, and on 4 KiB pages
    the kernel faults each page in: 400 ms for a fresh 1 GiB tensor here, 70 ms with huge pages
    (``docs/design/full-softmax-blocks.md``). PyTorch reads the variable at its first CPU
    allocation, so this runs before the command makes a tensor (importing bigvocab makes none).
    """
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")


@contextlib.contextmanager
def _progress_lines():
    """bigvocab's INFO lines (one per epoch when there is no progress bar) on standard error while
    the command runs: a library user sees them only by configuring logging, the command always.
    The handler leaves with the command, so ``main()`` called from Python leaves logging as it was."""
    logger = logging.getLogger("bigvocab")
    handler, level = _StandardError(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class _StandardError(logging.Handler):
    """Each record's message as a line on the standard error of the moment it is logged."""

    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), file=sys.stderr, flush=True)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that it ends a command like Ctrl-C does."""


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM raises :class:`_Terminated` (in the main thread; a Trainer saves on it instead)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(number: int, frame: object) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"bigvocab: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _fail(message: str, status: int = EXIT_ERROR, label: str = "error") -> int:
    print(f"bigvocab: {label}: {' '.join(message.split())}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
