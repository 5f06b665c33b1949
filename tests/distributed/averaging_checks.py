"""What each rank computes in the model-averaging tests: a linear model stepped by plain SGD on
rank-specific data with local SGD or EASGD (against the update rule, computed in the test), and
an NNLM trained by the Trainer with each method, stopped and resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from bigvocab.checkpoint import load_checkpoint
from bigvocab.data.corpora import load_corpus
from bigvocab.distributed.training import DistributedTraining
from bigvocab.models import build_model
from bigvocab.train import TrainConfig, Trainer

DIM, STEPS, PERIOD, LR, ALPHA = 3, 6, 2, 0.1, 0.3
CORPUS = "synthetic:vocab_size=40,num_classes=4,tokens=4000,seed=3"


def rank_data(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch rank ``rank`` steps on at ``step`` (from 1): different on every rank."""
    generator = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(4, DIM, generator=generator, dtype=torch.float64), torch.randn(
        4, generator=generator, dtype=torch.float64
    )


def initial_weight() -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, DIM, dtype=torch.float64)


def update_rule_run(group: Any, method: str) -> dict[str, Any]:
    rank = torch.distributed.get_rank(group)
    model = nn.Linear(DIM, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(initial_weight()[None])
    distributed = DistributedTraining(group)
    distributed.average_models(method, PERIOD, model, alpha=ALPHA if method == "easgd" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(1, STEPS + 1):
        x, y = rank_data(rank, step)
        optimizer.zero_grad()
        (model(x).squeeze(1) - y).square().mean().backward()
        optimizer.step()
        distributed.after_step(model, step)
    centre = distributed.averaging.consensus(model)[0]
    return {"weight": model.weight.detach().flatten().tolist(), "consensus": centre.flatten().tolist()}


def train(out_dir: Path, method: str, max_steps: int, distributed: DistributedTraining, resume: bool = False):
    corpus = load_corpus(CORPUS, progress=False)
    torch.manual_seed(0)
    model = build_model(
        "nnlm",
        len(corpus.vocab),
        "full",
        counts=corpus.vocab.counts,
        model_kwargs={"context": 2, "embedding_dim": 6, "hidden_dim": 5},
    ).double()
    if resume:
        trainer = Trainer.resume(
            out_dir, model, corpus.train, corpus.valid, distributed=distributed, max_steps=max_steps
        )
    else:
        config = TrainConfig(
            epochs=2,
            batch_size=8,
            optimizer="adam",
            lr=0.01,
            lr_schedule="none",
            max_steps=max_steps,
            log_every=1,
            progress=False,
            averaging=method,
            average_every=3,
        )
        trainer = Trainer(model, corpus.train, corpus.valid, config, out_dir=out_dir, distributed=distributed)
    trainer.fit()
    return trainer


def trainer_runs(group: Any, runs: str) -> dict[str, Any]:
    rank = torch.distributed.get_rank(group)
    results: dict[str, Any] = {}
    for method in ("local-sgd", "easgd"):
        straight = train(Path(runs) / f"{method}-straight", method, 40, DistributedTraining(group))
        train(Path(runs) / f"{method}-stopped", method, 17, DistributedTraining(group))
        resumed = train(Path(runs) / f"{method}-stopped", method, 40, DistributedTraining(group), resume=True)
        same = all(torch.equal(a, b) for a, b in zip(straight.model.parameters(), resumed.model.parameters()))
        results[f"{method}/resumed_equal"] = same
        results[f"{method}/history"] = [h["valid_ppl"] for h in straight.history]
        if rank == 0:
            checkpoint = load_checkpoint(Path(runs) / f"{method}-straight" / "last.pt")
            results[f"{method}/ranks_saved"] = len(checkpoint["replicas"]["ranks"])
            results[f"{method}/checkpoint_keys"] = sorted(checkpoint["model"])
    return results
