"""What each rank computes in the distributed Trainer tests: an NNLM trained by
:class:`bigvocab.train.Trainer` data parallel or vocabulary parallel, and (on rank 0) the same run
in one ordinary process, compared through the run files rank 0 writes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import torch

from bigvocab.checkpoint import load_checkpoint
from bigvocab.data.corpora import load_corpus
from bigvocab.distributed.training import DistributedTraining
from bigvocab.errors import TrainingInterrupted
from bigvocab.models import build_model
from bigvocab.train import TrainConfig, Trainer

CORPUS = "synthetic:vocab_size=40,num_classes=4,tokens=4000,seed=3"
BATCH = 8


def step_losses(out_dir: Path) -> list[float]:
    lines = (out_dir / "metrics.jsonl").read_text().splitlines()
    return [event["loss"] for event in map(json.loads, lines) if event.get("event") == "step"]


def make_model(corpus, output: str):
    options = {"num_samples": 6} if output == "sampled" else {}
    torch.manual_seed(0)
    return build_model(
        "nnlm",
        len(corpus.vocab),
        output,
        counts=corpus.vocab.counts,
        model_kwargs={"context": 2, "embedding_dim": 6, "hidden_dim": 5},
        output_kwargs=options,
    ).double()


def train(
    out_dir: Path,
    output: str,
    batch_size: int,
    max_steps: int,
    distributed: DistributedTraining | None,
    resume: bool = False,
) -> Trainer:
    corpus = load_corpus(CORPUS, progress=False)
    model = make_model(corpus, output)
    if resume:
        trainer = Trainer.resume(
            out_dir, model, corpus.train, corpus.valid, distributed=distributed, max_steps=max_steps
        )
    else:
        config = TrainConfig(
            epochs=1,
            batch_size=batch_size,
            optimizer="adagrad",
            lr=0.3,
            lr_schedule="none",
            max_steps=max_steps,
            log_every=1,
            progress=False,
            seed=0,
        )
        trainer = Trainer(model, corpus.train, corpus.valid, config, out_dir=out_dir, distributed=distributed)
    trainer.fit()
    return trainer


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    ours, reference = torch.as_tensor(ours).double(), torch.as_tensor(reference).double()
    return float((ours - reference).abs().max() / reference.abs().max().clamp_min(1e-300))


def compare(run: Path, reference: Path) -> dict[str, Any]:
    ours, ref = load_checkpoint(run / "last.pt"), load_checkpoint(reference / "last.pt")
    return {
        "losses": relative_error(torch.tensor(step_losses(run)), torch.tensor(step_losses(reference))),
        "num_losses": len(step_losses(run)),
        "same_keys": sorted(ours["model"]) == sorted(ref["model"]),
        "weights": max(relative_error(value, ref["model"][key]) for key, value in ours["model"].items()),
        "tokens": [ours["position"]["tokens"], ref["position"]["tokens"]],
    }


def all_checks(group: Any, runs: str) -> dict[str, Any]:
    root = Path(runs)
    rank, world = torch.distributed.get_rank(group), torch.distributed.get_world_size(group)
    results: dict[str, Any] = {}
    for layout, output in (
        ("data", "sampled"),
        ("vocab", "full"),
        ("vocab", "sampled"),
        ("vocab", "hsm"),
        ("vocab", "adaptive"),
    ):
        name = f"{layout}_{output}"
        distributed = DistributedTraining(group, vocab_parallel=layout == "vocab")
        # P ranks with batches of B step as one process with batches of P B (data parallel).
        reference_batch = BATCH * world if layout == "data" else BATCH
        # Stopped after 2 steps and resumed to 4: the one-process checkpoint carries every rank.
        train(root / name, output, BATCH, 2, distributed)
        train(root / name, output, BATCH, 4, distributed, resume=True)
        files_on_other_ranks = rank != 0 and any((root / name).glob(f"*.rank{rank}*"))
        if rank == 0:
            train(root / f"{name}_one", output, reference_batch, 4, None)
            results.update(
                {f"{name}/{key}": value for key, value in compare(root / name, root / f"{name}_one").items()}
            )
        results[f"{name}/stray_files"] = files_on_other_ranks
    return results


def leave_together(group: Any) -> dict[str, Any]:
    """Every rank leaves the run at its end: after it, no process group is left."""
    DistributedTraining(group).leave()
    return {"initialized": torch.distributed.is_initialized()}


class _SignalledTrainer(Trainer):
    """Sends itself SIGTERM during step ``signal_at`` (only on the rank that is given one)."""

    signal_at: int | None = None

    def _train_step(self, batch):
        outcome = super()._train_step(batch)
        if self.step == self.signal_at:
            os.kill(os.getpid(), signal.SIGTERM)
        return outcome


def signal_on_one_rank(group: Any, runs: str) -> dict[str, Any]:
    """SIGTERM reaches rank 1 alone, during step 2: every rank stops after that step (none waits at
    a collective the others never reach), and rank 0 has saved last.pt there."""
    rank = torch.distributed.get_rank(group)
    out_dir = Path(runs) / "signalled"
    results: dict[str, Any] = {}
    for layout in ("data", "vocab"):
        corpus = load_corpus(CORPUS, progress=False)
        config = TrainConfig(
            epochs=1,
            batch_size=BATCH,
            optimizer="adagrad",
            lr=0.3,
            lr_schedule="none",
            max_steps=6,
            log_every=1,
            progress=False,
            seed=0,
        )
        trainer = _SignalledTrainer(
            make_model(corpus, "full"),
            corpus.train,
            corpus.valid,
            config,
            out_dir=out_dir / layout,
            distributed=DistributedTraining(group, vocab_parallel=layout == "vocab"),
        )
        trainer.signal_at = 2 if rank == 1 else None
        try:
            trainer.fit()
            stopped = None
        except TrainingInterrupted as interrupted:
            stopped = {"step": interrupted.step, "signal": interrupted.signal_number}
        saved = load_checkpoint(out_dir / layout / "last.pt")["position"]["step"] if rank == 0 else None
        results.update({f"{layout}/stopped": stopped, f"{layout}/saved_step": saved})
    return results
