"""Quality: the same NNLM (Bengio et al. 2003) trained with every output layer on the same data,
for the same wall-clock time.

The question a user brings is *which layer gives the best model in the time I have*, so layers
are compared at equal training time, over curves (Chen et al. 2015): every row trains the model
from the same seed on the same training split (as many passes as fit), with the same optimiser
and learning rate, for ``budget_seconds`` of training wall time, and measures the *exact* test
and validation perplexities (every layer's ``log_prob`` normalises over the whole vocabulary) at
the fractions ``checkpoints`` of that budget. Evaluation is not counted as training time. Nothing
stops a run early; the validation figures let the recommendation (:mod:`bigvocab.bench.suites.recommend`)
keep, as early stopping would, the checkpoint with the lowest validation perplexity. On the synthetic
language each perplexity is also given as a ratio to the language's known floor exp(H), the
lowest any model can reach; Bengio's Brown protocol runs when a Brown path is given, and a user's
own corpus (any ``load_corpus`` spec) replaces the synthetic language when one is given.

The reference layer is also trained again with other seeds (``seed_repeats``): the spread of its
runs is the seed-to-seed noise below which the recommendation declines to rank two layers.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.rows import CurvePoint, QualityRow
from bigvocab.bench.harness.selection import Candidate
from bigvocab.bench.harness.side_data import SideData, build_layer, context_vectors
from bigvocab.models import MODELS  # importing the package registers the models

MODEL = "nnlm"
#: Passes allowed over a training split: the time budget, not the data, ends a quality run.
MAX_EPOCHS = 1_000_000


@dataclass(frozen=True)
class QualityTask:
    """One corpus: ``name`` as shown, a ``load_corpus`` spec, and the training-token budget."""

    name: str
    spec: str
    train_tokens: int | None


def quality_tasks(config: BenchConfig) -> list[QualityTask]:
    """The user's corpus (``config.corpus``) or else the small- and large-vocabulary synthetic
    languages, plus Brown when ``config.brown`` is set.

    The synthetic training split is exactly the token budget (its test split is a tenth of it); a
    user's corpus is trained on all of its training split.
    """
    quality = config.quality
    if config.corpus is not None:
        tasks = [QualityTask(corpus_name(config.corpus), config.corpus, None)]
    else:
        vocabs = [quality.small_vocab] + ([] if quality.large_vocab is None else [quality.large_vocab])
        tasks = [
            QualityTask(
                f"synthetic V={vocab}",
                f"synthetic:vocab_size={vocab},num_classes={min(quality.num_classes, vocab)},zipf={quality.zipf},"
                f"tokens={quality.train_tokens},seed={config.seed}",
                quality.train_tokens,
            )
            for vocab in vocabs
        ]
    if config.brown is not None:
        tasks.append(QualityTask("brown-bengio", f"brown-bengio:{config.brown}", quality.brown_train_tokens))
    return tasks


def corpus_name(spec: str) -> str:
    """How a user's corpus is shown: its kind and the last part of its path (``text:notes.txt``),
    which stays the same when ``--resume`` is given the same files in another directory."""
    kind, _, arg = spec.partition(":")
    return f"{kind}:{Path(arg).name}" if arg else kind


def quality_candidates(candidates: list[Candidate], config: BenchConfig) -> list[Candidate]:
    """The rows a quality run trains: all of ``candidates`` (``all_rows``, or rows the user chose
    with ``outputs``) or the first declared form of each registered layer among them, then the
    reference again with seeds ``seed + 1 ...`` (``seed_repeats``)."""
    quality = config.quality
    firsts: dict[str, Candidate] = {}
    for candidate in candidates:
        if candidate.kind == "layer":
            firsts.setdefault(candidate.method, candidate)
    chosen = candidates if quality.all_rows or config.outputs is not None else list(firsts.values())
    reference = [c for c in candidates if c.is_reference]
    repeats = [
        dataclasses.replace(c, label=f"{c.label} (seed {config.seed + r})", repeat=r)
        for c in reference
        for r in range(1, quality.seed_repeats + 1)
    ]
    return chosen + repeats


def corpus_side_data(corpus, *, seed: int) -> SideData:
    """Counts and spellings from the corpus vocabulary; vectors from its training stream."""
    vocab_size = len(corpus.vocab)

    def make_vectors() -> torch.Tensor:
        return context_vectors(corpus.train, vocab_size, seed=seed)

    return SideData(
        list(corpus.vocab.counts), list(corpus.vocab.words), make_vectors, "neighbour counts of the training split, SVD"
    )


def run_quality_task(
    task: QualityTask,
    candidates: list[Candidate],
    config: BenchConfig,
    on_row: Callable[[QualityRow], None],
    done: dict[str, QualityRow] | None = None,
) -> list[QualityRow]:
    """One row per candidate on ``task``'s corpus; a failing layer becomes a row with its error.
    A candidate whose label is in ``done`` (rows of an earlier piece of the run) is not trained
    again, its row is passed on as it was."""
    from bigvocab.data.corpora import load_corpus

    done = done or {}
    corpus = load_corpus(task.spec, progress=False)
    side = corpus_side_data(corpus, seed=config.seed)
    stream = corpus.stream("train")
    train_ids = stream if task.train_tokens is None else stream[: task.train_tokens]
    rows = []
    threads = torch.get_num_threads()
    for candidate in candidates:
        if candidate.label in done:
            on_row(done[candidate.label])
            rows.append(done[candidate.label])
            continue
        row = new_row(task.name, candidate, corpus, train_ids, config)
        try:
            torch.set_num_threads(row.threads)
            train_and_evaluate(row, candidate, corpus, train_ids, side, config)
            row.status = "ok"
        except Exception as error:  # a failing layer is a row that says why, never a silent gap
            row.status = "error"
            row.error = f"{type(error).__name__}: {error}"
        finally:
            torch.set_num_threads(threads)
        on_row(row)
        rows.append(row)
    return rows


def new_row(dataset: str, candidate: Candidate, corpus, train_ids: torch.Tensor, config: BenchConfig) -> QualityRow:
    """The row of ``candidate`` on ``corpus`` before training: what the run is made of."""
    return QualityRow(
        dataset=dataset,
        approach=candidate.label,
        repeat=candidate.repeat,
        method=candidate.method,
        kind=candidate.kind,
        vocab_size=len(corpus.vocab),
        train_tokens=int(train_ids.numel()),
        test_tokens=int(min(corpus.test.numel(), config.quality.test_tokens or corpus.test.numel())),
        floor_ppl=corpus.floor_perplexity,
        threads=config.quality.threads or torch.get_num_threads(),
    )


#: Steps timed before the training rate is known and the budget is turned into step limits.
PROBE_STEPS = 10


#: A stretch that lasts this many times the seconds the rate before it planned (and a second more)
#: is noted on the row: the step rate fell, as when another process takes the cores.
SLOWDOWN_NOTED = 1.5


def train_on_budget(
    trainer, seconds: float, checkpoints, evaluate: Callable[[], tuple[float, float | None]]
) -> tuple[list[CurvePoint], list[str]]:
    """Train for ``seconds`` of training wall time; at each fraction in ``checkpoints`` (increasing,
    the last 1) record a :class:`CurvePoint` with ``evaluate()``'s test and validation perplexities.

    Each stretch runs a number of steps computed from the rate measured so far (a limit the
    trainer honours and may change between ``fit`` calls), so the clock costs no check per step;
    a stretch that falls short of its goal is followed by another. A stretch that runs much slower
    than planned still trains its planned steps, which is what the budget allowed at the machine's
    own rate, but its point comes after its share of the budget: the second list says where.
    """
    curve: list[CurvePoint] = []
    slowdowns: list[str] = []
    trained = 0.0
    for fraction in checkpoints:
        goal = fraction * seconds
        while trained < goal:
            rate = trainer.step / trained if trainer.step else None
            steps = PROBE_STEPS if rate is None else max(1, int((goal - trained) * rate))
            trainer.config = dataclasses.replace(trainer.config, max_steps=trainer.step + steps)
            before = trainer.step
            start = time.perf_counter()
            trainer.fit()
            elapsed = time.perf_counter() - start
            trained += elapsed
            if trainer.step == before:  # nothing left to train on (the epochs are spent)
                break
            planned = (trainer.step - before) / rate if rate else elapsed
            if elapsed > SLOWDOWN_NOTED * planned + 1.0:
                slowdowns.append(
                    f"steps {before}-{trainer.step} took {elapsed:.0f} s, {elapsed / planned:.1f}x the {planned:.0f} s "
                    "the earlier rate planned (the machine was busy?)"
                )
        test_ppl, valid_ppl = evaluate()
        curve.append(CurvePoint(goal, trained, trainer.tokens, trainer.step, test_ppl, valid_ppl=valid_ppl))
    return curve, slowdowns


def train_and_evaluate(
    row: QualityRow, candidate: Candidate, corpus, train_ids: torch.Tensor, side: SideData, config: BenchConfig
) -> None:
    """Train the NNLM with ``candidate``'s output layer; fill ``row`` with the exact test (and
    validation, when the corpus has a validation split) perplexity curve and wall times."""
    from bigvocab.train import TrainConfig, Trainer

    quality = config.quality
    model_class = MODELS.get(MODEL)
    vocab_size = len(corpus.vocab)
    seed = config.seed + candidate.repeat
    torch.manual_seed(seed)
    output, shown = build_layer(
        candidate, model_class.output_features(**quality.model_kwargs), vocab_size, side, num_samples=config.num_samples
    )
    model = model_class(vocab_size, output, **quality.model_kwargs)
    train_config = TrainConfig(
        epochs=MAX_EPOCHS,
        batch_size=quality.batch_size,
        optimizer=quality.optimizer,
        lr=quality.lr,
        lr_schedule="none",
        seed=seed,
        device=config.device,
        progress=False,
    )
    # A copy takes the first step, untimed: it loads compiled kernels and allocates the optimiser's
    # state, a cost of the process, not of the layer whose row comes first.
    Trainer(copy.deepcopy(model), train_ids, None, dataclasses.replace(train_config, max_steps=1)).fit()
    # The trainer gets no validation split: the time budget, not early stopping, ends the run;
    # validation perplexity is measured beside the test's, at the checkpoints.
    trainer = Trainer(model, train_ids, None, train_config)
    evaluation = [0.0]
    test_ids, valid_ids = (split[: quality.test_tokens] for split in (corpus.test, corpus.valid))

    def evaluate() -> tuple[float, float | None]:
        start = time.perf_counter()
        test_ppl = float(trainer.evaluate(test_ids))
        valid_ppl = float(trainer.evaluate(valid_ids)) if valid_ids.numel() > 1 else None
        evaluation[0] += time.perf_counter() - start
        return test_ppl, valid_ppl

    curve, slowdowns = train_on_budget(trainer, quality.budget_seconds, quality.checkpoints, evaluate)
    floor = corpus.floor_perplexity
    for point in curve:
        point.ppl_ratio = point.test_ppl / floor if floor else None
    row.options = shown
    row.params = sum(p.numel() for p in output.parameters())
    row.tokens_seen = trainer.tokens
    row.epochs_seen = trainer.tokens / max(1, train_ids.numel() - 1)
    row.test_ppl = curve[-1].test_ppl
    row.ppl_ratio = curve[-1].ppl_ratio
    row.train_seconds = curve[-1].train_seconds
    row.eval_seconds = evaluation[0]
    row.curve = curve
    row.error = "; ".join(slowdowns)
