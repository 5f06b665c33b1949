"""Quality: the same NNLM (Bengio et al. 2003) trained with every output layer on the same data.

Every row trains the model from the same seed on the same first ``train_tokens`` tokens of the
training split (one pass, a fixed token budget, cut short by a time cap that is also the same
for every layer, so that one slow layer cannot stall the run), with the same optimiser and
learning rate, then reports the *exact* test perplexity
(every layer's ``log_prob`` normalises over the whole vocabulary) and the wall time. On the
synthetic language the perplexity is also given as a ratio to its known floor exp(H), the lowest
perplexity any model can reach; Bengio's Brown protocol runs when a Brown path is given.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from bigvocab.bench.config import BenchConfig
from bigvocab.bench.selection import Candidate
from bigvocab.bench.side_data import SideData, build_layer, context_vectors
from bigvocab.models import MODELS  # importing the package registers the models

MODEL = "nnlm"


@dataclass(frozen=True)
class QualityTask:
    """One corpus: ``name`` as shown, a ``load_corpus`` spec, and the training-token budget."""

    name: str
    spec: str
    train_tokens: Optional[int]


def quality_tasks(config: BenchConfig) -> list[QualityTask]:
    """Small- and large-vocabulary synthetic languages, plus Brown when ``config.brown`` is set.

    The synthetic training split is exactly the token budget (its test split is a tenth of it).
    """
    quality = config.quality
    tasks = [
        QualityTask(
            f"synthetic V={vocab}",
            f"synthetic:vocab_size={vocab},num_classes={min(quality.num_classes, vocab)},"
            f"tokens={quality.train_tokens},seed={config.seed}",
            quality.train_tokens,
        )
        for vocab in (quality.small_vocab, quality.large_vocab)
    ]
    if config.brown is not None:
        tasks.append(QualityTask("brown-bengio", f"brown-bengio:{config.brown}", quality.brown_train_tokens))
    return tasks


def corpus_side_data(corpus, *, seed: int) -> SideData:
    """Counts and spellings from the corpus vocabulary; vectors from its training stream."""
    vocab_size = len(corpus.vocab)

    def make_vectors() -> torch.Tensor:
        return context_vectors(corpus.train, vocab_size, seed=seed)

    return SideData(
        list(corpus.vocab.counts), list(corpus.vocab.words), make_vectors, "neighbour counts of the training split, SVD"
    )


def run_quality_task(
    task: QualityTask, candidates: list[Candidate], config: BenchConfig, on_row: Callable[[dict], None]
) -> list[dict]:
    """One row per candidate on ``task``'s corpus; a failing layer becomes a row with its error."""
    from bigvocab.data.corpora import load_corpus

    corpus = load_corpus(task.spec, progress=False)
    side = corpus_side_data(corpus, seed=config.seed)
    train_ids = corpus.train if task.train_tokens is None else corpus.train[: task.train_tokens]
    rows = []
    threads = torch.get_num_threads()
    for candidate in candidates:
        row = {
            "phase": "quality",
            "dataset": task.name,
            "approach": candidate.label,
            "method": candidate.method,
            "kind": candidate.kind,
            "vocab_size": len(corpus.vocab),
            "train_tokens": int(train_ids.numel()),
            "test_tokens": int(corpus.test.numel()),
            "floor_ppl": corpus.floor_perplexity,
            "threads": config.quality.threads or threads,
        }
        try:
            torch.set_num_threads(row["threads"])
            row.update(train_and_evaluate(candidate, corpus, train_ids, side, config))
            row["status"] = "ok"
        except Exception as error:  # a failing layer is a row that says why, never a silent gap
            row["status"] = "error"
            row["error"] = f"{type(error).__name__}: {error}"
        finally:
            torch.set_num_threads(threads)
        on_row(row)
        rows.append(row)
    return rows


#: Steps timed before the time cap is turned into a step limit.
PROBE_STEPS = 10


def fit_within(trainer, seconds: float) -> bool:
    """One pass, or as many steps as fit in ``seconds``; True when the time cap stopped it.

    A few steps are timed first and the rest get ``max_steps`` from the measured rate (a limit
    the trainer honours and may change between ``fit`` calls), so the cap costs no check per step.
    """
    trainer.config = dataclasses.replace(trainer.config, max_steps=PROBE_STEPS)
    start = time.perf_counter()
    trainer.fit()
    if trainer.epoch >= 1:
        return False
    per_step = (time.perf_counter() - start) / max(1, trainer.step)
    allowed = max(trainer.step, int(seconds / per_step))
    trainer.config = dataclasses.replace(trainer.config, max_steps=allowed)
    trainer.fit()
    return trainer.epoch < 1


def train_and_evaluate(
    candidate: Candidate, corpus, train_ids: torch.Tensor, side: SideData, config: BenchConfig
) -> dict:
    """Train the NNLM with ``candidate``'s output layer; exact test perplexity and wall times."""
    from bigvocab.train import TrainConfig, Trainer

    quality = config.quality
    model_class = MODELS.get(MODEL)
    vocab_size = len(corpus.vocab)
    torch.manual_seed(config.seed)
    output, shown = build_layer(
        candidate, model_class.output_features(**quality.model_kwargs), vocab_size, side, num_samples=config.num_samples
    )
    model = model_class(vocab_size, output, **quality.model_kwargs)
    train_config = TrainConfig(
        epochs=1,
        batch_size=quality.batch_size,
        optimizer=quality.optimizer,
        lr=quality.lr,
        lr_schedule="none",
        seed=config.seed,
        device=config.device,
        progress=False,
    )
    # No validation set: one pass under a fixed budget leaves nothing to select or stop on.
    trainer = Trainer(model, train_ids, None, train_config)
    start = time.perf_counter()
    capped = fit_within(trainer, quality.max_train_seconds)
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    test_ppl = float(trainer.evaluate(corpus.test))
    eval_seconds = time.perf_counter() - start
    floor = corpus.floor_perplexity
    return {
        "options": shown,
        "params": sum(p.numel() for p in output.parameters()),
        "tokens_seen": trainer.tokens,
        "time_capped": capped,
        "test_ppl": test_ppl,
        "ppl_ratio": test_ppl / floor if floor else None,
        "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
    }
