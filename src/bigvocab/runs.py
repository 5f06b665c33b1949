"""A run as ``bigvocab train`` describes it -- a registered model and output layer named with their
options, a corpus spec, a run directory -- and what every caller does once training ends: the
exact test perplexity of the model the run kept. A run gets its corpus, its model and its
trainer here -- word2vec's engine trainer where the engine can train it -- so this module sits
above :mod:`bigvocab.word2vec`, which builds on :mod:`bigvocab.train`; the CLI calls it.

A run's description (``meta``, stored in every checkpoint) holds the corpus spec with an absolute
path and the corpus's fingerprint (:func:`~bigvocab.data.corpora.corpus_fingerprint`), so a run
is evaluated and resumed from any directory, its corpus may move, and a corpus that changed is
noticed instead of silently giving another split.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import Tensor

from bigvocab.checkpoint import VOCABULARY_SIDE_INPUTS, build_from_meta, load_checkpoint
from bigvocab.data.corpora import (
    EOS,
    Corpus,
    corpus_fingerprint,
    fingerprint_difference,
    load_corpus,
    portable_spec,
)
from bigvocab.data.vocab import Vocab
from bigvocab.data.xmc import LabelledRows
from bigvocab.distributed.training import DistributedTraining
from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate import vectors  # noqa: F401  (registers the word-vector side input)
from bigvocab.evaluate.perplexity import perplexity
from bigvocab.evaluate.retrieval import evaluate_retrieval
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import side_input_readers
from bigvocab.registry import MODELS, OUTPUTS, SIDE_LOADERS
from bigvocab.train.config import RESUME_OVERRIDES, TrainConfig
from bigvocab.train.rundir import PYTHON_SPELLING
from bigvocab.train.trainer import Trainer
from bigvocab.word2vec.trainer import configure_engine, trainer_class

PathLike = str | os.PathLike


def new_run(
    model: str,
    output: str | None,
    config: TrainConfig,
    out_dir: PathLike,
    *,
    corpus: str = "synthetic",
    model_kwargs: Mapping[str, Any] | None = None,
    output_kwargs: Mapping[str, Any] | None = None,
    min_count: int | None = None,
    max_size: int | None = None,
    side: Mapping[str, PathLike] | None = None,
    validate: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    workers: int | None = None,
    spelling: Mapping[str, str] = PYTHON_SPELLING,
    distributed: DistributedTraining | None = None,
) -> tuple[Trainer, Corpus]:
    """A :class:`Trainer` for a fresh run of the registered ``model`` with the ``output`` layer on
    ``corpus``, and the corpus.

    Args:
        side: the output layer's side inputs from outside the corpus, kind -> path, each read by
            its loader (:data:`~bigvocab.registry.SIDE_LOADERS`; ``vectors``: word vectors from a
            checkpoint or a word2vec file). A layer must read each one given, and is given every
            one it reads: the vocabulary's ``counts`` and ``words``, and these. The run records
            the layer as built from them (:meth:`~bigvocab.outputs.base.OutputLayer.rebuild_options`),
            so evaluation and resume never need the files again.
        validate: measure validation perplexity after every epoch (best.pt, early stopping).
        workers: threads of word2vec's compiled engine, which trains the run when it can
            (:func:`bigvocab.word2vec.trainer.trainer_class`); None: one thread where it does,
            and a run it cannot train stays on the torch path.
        spelling: how messages name ``workers`` (the CLI passes its flags).
        distributed: this process's part in a torchrun launch
            (:meth:`DistributedTraining.from_environment`), or None; every rank calls this. The
            engine is one process's threads, so such a run steps on the torch path.
    """
    import bigvocab.models  # noqa: F401  (registers the models)

    model_class = MODELS.get(model)
    model_kwargs = dict(model_kwargs or {})
    side = dict(side or {})
    # the model's options and the side inputs are checked before a long corpus read
    model_class.make_config(**model_kwargs)
    output_kwargs = dict(output_kwargs or {})
    check_side_inputs(model, output, output_kwargs, side, spelling)
    data = load_corpus(corpus, min_count=min_count, max_size=max_size, progress=progress)
    accepted = model_class.declared_options()
    model_kwargs.update(
        {key: value for key, value in data.model_options.items() if key in accepted and key not in model_kwargs}
    )
    meta: dict[str, Any] = {
        "model": model,
        "output": output,
        "model_kwargs": model_kwargs,
        "output_kwargs": output_kwargs,
        "corpus": portable_spec(corpus),
        "corpus_fingerprint": corpus_fingerprint(corpus),
        "corpus_options": {"min_count": min_count, "max_size": max_size},
        "vocab": data.vocab.to_dict(),
        "seed": config.seed,
        "validate": validate,
    }
    loaded = {kind: SIDE_LOADERS.get(kind)(path, data.vocab) for kind, path in side.items()}
    built, _ = build_from_meta(meta, side=loaded)
    if side:
        meta["side"] = {kind: str(Path(path).resolve()) for kind, path in side.items()}
        meta["output_kwargs"] = _recorded_options(built.output, output_kwargs, side)
    chosen = _trainer_class(built, config, workers, spelling, distributed)
    trainer = chosen(
        built,
        data.train,
        data.valid if validate else None,
        config,
        out_dir=out_dir,
        meta=meta,
        overwrite=overwrite,
        distributed=distributed,
        sentence_end=sentence_end(data.vocab),
    )
    configure_engine(trainer, workers, data.vocab)
    return trainer, data


def sentence_end(vocab: Vocab) -> int | None:
    """The id of the sentence-end token in ``vocab``, or None when its corpus marks no sentences."""
    return vocab.index(EOS) if EOS in vocab else None


def _trainer_class(
    model,
    config: TrainConfig,
    workers: int | None,
    spelling: Mapping[str, str],
    distributed: DistributedTraining | None,
) -> type[Trainer]:
    """:func:`~bigvocab.word2vec.trainer.trainer_class` in one process; the torch Trainer under
    torchrun, where the engine (one process's threads) does not run."""
    if distributed is None:
        return trainer_class(model, config, workers, spelling)
    if workers is not None:
        raise ConfigError(
            f"{spelling['workers']} sets the threads of the word2vec engine, which does not run "
            "under torchrun; leave it out"
        )
    return Trainer


def check_side_inputs(
    model: str,
    output: str | None,
    output_kwargs: Mapping[str, Any],
    side: Mapping[str, Any],
    spelling: Mapping[str, str] = PYTHON_SPELLING,
) -> None:
    """A :class:`ConfigError` unless the output layer ``output`` built with ``output_kwargs``
    reads each of the ``side`` inputs given and is given each one it reads that a run's
    vocabulary does not give (:data:`~bigvocab.checkpoint.VOCABULARY_SIDE_INPUTS`)."""
    for kind in side:
        SIDE_LOADERS.get(kind)  # an unknown kind names the valid ones
    if output is None:
        if side:
            given = spelling["side"].format(kind=next(iter(side)))
            raise ConfigError(f"{given}: model {model!r} has no output layer to read it")
        return
    layer = f"output layer {output!r}" + "".join(
        f"{' with' if i == 0 else ','} {key}={value!r}" for i, (key, value) in enumerate(output_kwargs.items())
    )
    reads = OUTPUTS.get(output).side_inputs(output_kwargs)
    unread = sorted(set(side) - reads)
    if unread:
        kind = unread[0]
        readers = ", ".join(side_input_readers(kind)) or "none"
        raise ConfigError(
            f"{spelling['side'].format(kind=kind)}: {layer} does not read {kind} (the layers that do: {readers})"
        )
    missing = sorted(reads - set(VOCABULARY_SIDE_INPUTS) - set(side))
    if missing:
        kind = missing[0]
        raise ConfigError(
            f"{layer} reads {kind}, which the corpus does not give: pass {spelling['side'].format(kind=kind)}: "
            + (_lower_first(SIDE_LOADERS.describe(kind)) if kind in SIDE_LOADERS else "no loader is registered for it")
        )


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _recorded_options(layer: OutputLayer, options: dict[str, Any], side: Mapping[str, Any]) -> dict[str, Any]:
    """``layer``'s options as a run records them: rebuilt without the ``side`` inputs, which a
    checkpoint does not carry."""
    rebuilt = layer.rebuild_options(options)
    still = type(layer).side_inputs(rebuilt) & set(side)
    if still:
        name = getattr(type(layer), "registered_name", type(layer).__name__)
        raise ConfigError(
            f"output layer {name!r} cannot be recorded without its {', '.join(sorted(still))} "
            "(its rebuild_options keeps reading them), so its runs could not be evaluated or resumed"
        )
    return rebuilt


def resume_run(
    out_dir: PathLike,
    *,
    checkpoint: dict[str, Any] | None = None,
    corpus: str | None = None,
    allow_changed_corpus: bool = False,
    validate: bool = True,
    progress: bool = True,
    spelling: Mapping[str, str] = PYTHON_SPELLING,
    workers: int | None = None,
    distributed: DistributedTraining | None = None,
    **overrides: Any,
) -> tuple[Trainer, Corpus]:
    """A :class:`Trainer` that continues the run in ``out_dir`` from its ``last.pt``, and its corpus.

    Args:
        checkpoint: ``last.pt`` when the caller has read it already.
        corpus: the run's corpus in a new place (the stored spec by default); it must have the
            stored fingerprint.
        allow_changed_corpus: go on with a corpus whose files changed since the run started (the
            vocabulary stays the run's; the splits are cut from the files as they are now).
        spelling: how messages name ``corpus`` and ``allow_changed_corpus`` (keyword arguments by
            default; the CLI passes its flags).
        workers: as for :func:`new_run` (not part of the run: a resumed run may use others).
        distributed: as for :func:`new_run`; the run may resume under another number of processes.
        **overrides: the options that may change (``bigvocab.train.RESUME_OVERRIDES``).
    """
    out_dir = Path(out_dir)
    if checkpoint is None:
        checkpoint = load_checkpoint(out_dir / "last.pt")
    meta = dict(checkpoint.get("meta") or {})
    if "corpus" not in meta or "vocab" not in meta:
        raise ConfigError(
            f"{str(out_dir / 'last.pt')!r} does not describe its model and corpus (it was not "
            "written by bigvocab.runs.new_run or 'bigvocab train'); use Trainer.resume"
        )
    spec = corpus or meta["corpus"]
    check_corpus(meta, spec, allow_changed=allow_changed_corpus, spelling=spelling)
    data = load_corpus(spec, vocab=Vocab.from_dict(meta["vocab"]), progress=progress)
    if corpus is not None or allow_changed_corpus:  # later checkpoints describe the corpus as it is now
        meta.update(corpus=portable_spec(spec), corpus_fingerprint=corpus_fingerprint(spec))
    model, _ = build_from_meta(meta)
    # the class is chosen with the options the resumed run will have (device may change)
    stored = checkpoint.get("config")
    chosen = Trainer
    if stored:  # without it Trainer.resume says what is missing
        resumed = {**stored, **{name: value for name, value in overrides.items() if name in RESUME_OVERRIDES}}
        chosen = _trainer_class(model, TrainConfig.from_dict(resumed), workers, spelling, distributed)
    trainer = chosen.resume(
        out_dir,
        model,
        data.train,
        data.valid if validate else None,
        checkpoint=checkpoint,
        distributed=distributed,
        sentence_end=sentence_end(data.vocab),
        progress=progress,
        **overrides,
    )
    configure_engine(trainer, workers, data.vocab)
    trainer.meta = meta
    return trainer, data


def check_corpus(
    meta: Mapping[str, Any], spec: str, *, allow_changed: bool = False, spelling: Mapping[str, str] = PYTHON_SPELLING
) -> None:
    """A :class:`DataError` when ``spec``'s files are not those the run described by ``meta`` was
    trained on (unless ``allow_changed``); ``spec`` may name them by another path."""
    kind = spec.partition(":")[0]
    stored_kind = str(meta.get("corpus", "")).partition(":")[0]
    if kind != stored_kind:
        raise DataError(f"the run was trained on a {stored_kind!r} corpus ({meta.get('corpus')}), not {kind!r}")
    if kind == "synthetic":
        if spec != meta["corpus"]:
            raise DataError(f"the run was trained on {meta['corpus']!r}, not {spec!r}")
        return
    if not Path(spec.partition(":")[2]).expanduser().exists():
        raise DataError(
            f"the run's corpus {spec!r} does not exist (any more); give its new place with {spelling['corpus']}"
        )
    difference = fingerprint_difference(meta.get("corpus_fingerprint"), corpus_fingerprint(spec))
    if difference is not None and not allow_changed:
        raise DataError(
            f"the corpus {spec!r} is not the one the run was trained on ({difference}); "
            f"pass {spelling['allow_changed_corpus']} to go on with it"
        )


def train_and_test(trainer: Trainer, test_ids: Tensor | LabelledRows | None) -> dict[str, Any]:
    """Train to the end, then the exact perplexity on ``test_ids`` of the best checkpoint the run
    wrote (the last one when no epoch was validated, the model in memory when it keeps nothing
    on disk), and for a model evaluated by retrieval (``evaluation == "retrieval"``) its P@k,
    nDCG@k, PSP@k, recall@k and MRR on those rows. ``test_ids`` None, or a model without a
    distribution, gives ``test_ppl`` None.

    Returns :meth:`Trainer.result` with ``test_ppl``, ``test_metrics`` (or None) and
    ``checkpoint`` (the file evaluated).
    """
    result = trainer.fit()
    chosen = result["best_path"] or result["last_path"]
    test_ppl, test_metrics = None, None
    try:
        if chosen is not None:
            trainer.load_model_state(load_checkpoint(chosen)["model"])
        if test_ids is not None and trainer.model.has_distribution:
            test_ppl = perplexity(trainer.model, test_ids, trainer.config.batch_size)
        if (
            test_ids is not None
            and trainer.model.evaluation == "retrieval"
            and isinstance(trainer.train_ids, LabelledRows)
        ):
            test_metrics = evaluate_retrieval(
                trainer.model,
                test_ids,
                label_counts=trainer.train_ids.label_counts().tolist(),
                num_examples=len(trainer.train_ids),
                batch_size=trainer.config.batch_size,
            )
    except KeyboardInterrupt as error:
        raise type(error)(
            f"interrupted during the test evaluation; the trained run is saved in {str(trainer.out_dir)!r}"
        ) from None
    if test_ppl is not None and not math.isfinite(test_ppl):
        warnings.warn(
            f"test perplexity is {test_ppl}: the model gives some test word probability 0 (it "
            "diverged; a lower learning rate usually helps)",
            stacklevel=2,
        )
    return {**result, "test_ppl": test_ppl, "test_metrics": test_metrics, "checkpoint": chosen}


def run_summary(trainer: Trainer, corpus: Corpus, outcome: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """What ``summary.json`` records: the run's description, :func:`train_and_test`'s outcome,
    and the test perplexity over the corpus's floor where that is known."""
    floor, test_ppl = corpus.floor_perplexity, outcome["test_ppl"]
    return {
        "model": trainer.meta.get("model"),
        "output": trainer.meta.get("output"),
        "corpus": trainer.meta.get("corpus"),
        "vocab_size": len(corpus.vocab),
        "parameters": sum(p.numel() for p in trainer.model.parameters()),
        "test_ppl": test_ppl,
        "perplexity_skipped": test_ppl is None and trainer.model.has_distribution,
        "floor_ppl": floor,
        "test_ppl_over_floor": test_ppl / floor if (test_ppl is not None and floor) else None,
        "test_metrics": outcome.get("test_metrics"),
        "best_valid_ppl": outcome["best_valid_ppl"],
        "best_epoch": outcome["best_epoch"],
        "epochs_completed": outcome["epochs_completed"],
        "stopped_early": outcome["stopped_early"],
        "steps": outcome["steps"],
        "steps_are_passes": trainer.steps_are_passes,
        "tokens": outcome["tokens"],
        "train_seconds": outcome["elapsed"],
        "seconds_this_call": seconds,
        "checkpoint": str(outcome["checkpoint"]) if outcome["checkpoint"] is not None else None,
    }
