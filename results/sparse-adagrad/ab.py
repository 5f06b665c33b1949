"""Adagrad's step on sparse row gradients, torch's own (``torch.optim.Adagrad.step``, the code
before) against this checkout's compiled rows (``bigvocab.train.optimizers.Adagrad``), alternating
in one process, 2 threads, 3 rounds; medians of 31 steps.

``alone``: the step alone on one (V, H) parameter whose gradient touches U distinct rows
(a fresh coalesced gradient each step, its construction included in both).
``quality``: the bench's ``--full`` quality preset (NNLM, H = 128, batch 256, Adagrad 0.1, the
synthetic V = 100k language): ms per training step of whole model, and of the optimiser steps.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/sparse-adagrad/ab.py alone V:H:U [V:H:U ...]
    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/sparse-adagrad/ab.py quality NAME [NAME ...]
"""
import dataclasses
import sys
import time
from pathlib import Path

import torch

from bigvocab.bench import quality as bench_quality
from bigvocab.bench.config import BenchConfig
from bigvocab.data.corpora import load_corpus
from bigvocab.factory import create_output
from bigvocab.models import MODELS
from bigvocab.train import TrainConfig, Trainer
from bigvocab.train.optimizers import Adagrad

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

COMPILED = Adagrad.step


def torch_step(self, closure=None):
    """torch's step, with the sparse-invariant opt-out the class had before."""
    with torch.sparse.check_sparse_tensor_invariants(enable=False):
        return torch.optim.Adagrad.step(self, closure)


WAYS = (("torch", torch_step), ("compiled", COMPILED))




def alone(spec: str) -> None:
    vocab, width, touched = map(int, spec.split(":"))
    param = torch.nn.Parameter(torch.randn(vocab, width))
    optimizer = Adagrad([param], lr=0.1)
    rows = torch.randperm(vocab)[:touched].sort().values
    values = torch.randn(touched, width)

    def step():
        param.grad = torch.sparse_coo_tensor(rows.unsqueeze(0), values, param.shape, is_coalesced=True,
                                             check_invariants=False)
        optimizer.step()

    for round_ in range(3):
        times = {}
        for label, way in WAYS:
            Adagrad.step = way
            times[label] = median_ms(step, 31)
        Adagrad.step = COMPILED
        print(f"alone V={vocab} H={width} U={touched} round {round_ + 1}: torch {times['torch']:.3f} ms, "
              f"compiled {times['compiled']:.3f} ms, {times['torch'] / times['compiled']:.2f}x", flush=True)


def quality(name: str) -> None:
    config = BenchConfig.full()
    preset = config.quality
    task = next(task for task in bench_quality.quality_tasks(config) if task.name.endswith(f"V={preset.large_vocab}"))
    corpus = load_corpus(task.spec, progress=False)
    counts = list(corpus.vocab.counts)
    model_class = MODELS.get(bench_quality.MODEL)
    torch.manual_seed(0)
    output = create_output(name, model_class.output_features(**preset.model_kwargs), len(corpus.vocab), counts=counts)
    model = model_class(len(corpus.vocab), output, **preset.model_kwargs)
    train_config = TrainConfig(epochs=bench_quality.MAX_EPOCHS, batch_size=preset.batch_size, optimizer=preset.optimizer,
                               lr=preset.lr, lr_schedule="none", seed=0, progress=False, max_steps=20)
    trainer = Trainer(model, corpus.train, None, train_config)
    trainer.fit()
    optimizer_seconds = [0.0]
    for optimizer in trainer.optimizers:
        def timed(*args, _optimizer=optimizer, **kwargs):
            start = time.perf_counter()
            result = type(_optimizer).step(_optimizer, *args, **kwargs)  # the class's step of the moment
            optimizer_seconds[0] += time.perf_counter() - start
            return result
        optimizer.step = timed
    steps = 100
    for round_ in range(3):
        times = {}
        for label, way in WAYS:
            Adagrad.step = way
            trainer.config = dataclasses.replace(trainer.config, max_steps=trainer.step + steps)
            optimizer_seconds[0] = 0.0
            start = time.perf_counter()
            trainer.fit()
            times[label] = ((time.perf_counter() - start) / steps * 1e3, optimizer_seconds[0] / steps * 1e3)
        Adagrad.step = COMPILED
        print(f"quality {name} V={len(corpus.vocab)} round {round_ + 1}: step torch {times['torch'][0]:.2f} ms "
              f"(optimisers {times['torch'][1]:.2f}), compiled {times['compiled'][0]:.2f} ms (optimisers "
              f"{times['compiled'][1]:.2f}), {times['torch'][0] / times['compiled'][0]:.2f}x", flush=True)


def main() -> None:
    torch.set_num_threads(2)
    run = {"alone": alone, "quality": quality}[sys.argv[1]]
    for argument in sys.argv[2:]:
        run(argument)


if __name__ == "__main__":
    main()
