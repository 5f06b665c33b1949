"""Training-step time and output-layer parameters of the Brown NNLM with full, cnn and char.

Same model as results/brown-nnlm (context 4, m = 30, h = 100, no direct connections), batch 256,
Adam (SparseAdam for sparse parameters, as the trainer does). The three models take turns, one
block of STEPS steps each per round, in a rotated order, so drift on the shared machine falls on
all three alike; the figure is the median over rounds of each model's mean step time.

    OMP_NUM_THREADS=1 PYTHONPATH=src python results/char-brown/step_time.py ../shared/data/brown
"""
import statistics
import sys
import time

import torch

from bigvocab.data.corpora import load_corpus
from bigvocab.models import build_model
from bigvocab.train import TrainConfig, build_optimizers

ROUNDS, STEPS = 5, 5
torch.set_num_threads(1)
torch.manual_seed(0)
corpus = load_corpus(f"brown-bengio:{sys.argv[1]}")
words = list(corpus.vocab.words)
models, steps = {}, {}
for name, options in (("full", {}), ("cnn", {}), ("char", {"decoder_size": 128, "char_dim": 32})):
    model = build_model("nnlm", len(corpus.vocab), name, counts=corpus.vocab.counts, words=words,
                        model_kwargs={"context": 4, "hidden_dim": 100, "embedding_dim": 30, "direct": False},
                        output_kwargs=options)
    # Adam: the sparse rows go to SparseAdam, the rest to Adam, as in the trainer.
    optimizers, _ = build_optimizers(model, TrainConfig(optimizer="adam", lr=2e-3))
    batches = model.batches(corpus.train, 256, train=True, generator=torch.Generator().manual_seed(0))

    def step(model=model, optimizers=optimizers, batches=batches):
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        model.loss(next(batches)).backward()
        for optimizer in optimizers:
            optimizer.step()

    step()  # warm-up
    models[name] = model
    steps[name] = step
times = {name: [] for name in steps}
names = list(steps)
for round_ in range(ROUNDS):
    for name in names[round_ % 3:] + names[: round_ % 3]:
        start = time.perf_counter()
        for _ in range(STEPS):
            steps[name]()
        times[name].append((time.perf_counter() - start) / STEPS)
full = statistics.median(times["full"])
for name in names:
    params = sum(p.numel() for p in models[name].output.parameters())
    median = statistics.median(times[name])
    print(f"{name:5s} step {median * 1000:7.1f} ms  ({full / median:.2f}x full)  output-layer parameters {params:,}")
