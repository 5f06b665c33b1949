"""How far from the synthetic language's floor does the bench's `full` NNLM get, and what moves it?

Trains the quality runs' model (``BenchConfig.full().quality``: NNLM, embedding 32, hidden 128,
context 4, Adam, batch 256) with the ``full`` layer on the synthetic language for a fixed number
of *steps*, not seconds, so that the figures do not depend on the machine's load, and prints the
exact test perplexity and its ratio to the floor at each evaluation step. Session 8's quiet
`bench --full` trained `full` for 468k tokens (1,830 steps of 256) in its 120 s at V = 10k.

Usage: python sizing.py [--vocab 10000] [--zipf 1.0] [--classes 50] [--lr 0.01] [--batch 256]
                        [--optimizer adam] [--evals 230,460,915,1830,3660] [--tokens 2000000]
                        [--bias-init zero|unigram] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from bigvocab.bench.config import BenchConfig
from bigvocab.data.corpora import load_corpus
from bigvocab.models import MODELS, build_model
from bigvocab.train import TrainConfig, Trainer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", type=int, default=10_000)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--classes", type=int, default=50)
    parser.add_argument("--concentration", type=float, default=0.1)
    parser.add_argument("--tokens", type=int, default=2_000_000)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--output", default="full")
    parser.add_argument("--evals", default="230,460,915,1830,3660")
    parser.add_argument("--test-tokens", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0, help="of the language, the weights and the batches")
    parser.add_argument("--bias-init", choices=["zero", "unigram"], default="zero",
                        help="unigram: the output bias starts at the log unigram frequency of the training split")
    args = parser.parse_args()
    torch.set_num_threads(1)
    quality = BenchConfig.full().quality
    spec = (f"synthetic:vocab_size={args.vocab},num_classes={args.classes},zipf={args.zipf},"
            f"concentration={args.concentration},tokens={args.tokens},seed={args.seed}")
    corpus = load_corpus(spec, progress=False)
    floor = corpus.floor_perplexity
    counts = list(corpus.vocab.counts)
    unigram = torch.tensor(counts, dtype=torch.float64) + 1  # add-one: a test word may be unseen
    unigram = unigram / unigram.sum()
    test = corpus.test[: args.test_tokens]
    unigram_ppl = float(torch.exp(-unigram[test].log().mean()))
    torch.manual_seed(args.seed)
    model = build_model("nnlm", len(corpus.vocab), args.output, counts=counts, model_kwargs=quality.model_kwargs)
    if args.bias_init == "unigram":
        with torch.no_grad():
            model.output.scorer.bias.copy_(unigram.log())
    config = TrainConfig(epochs=1_000_000, batch_size=args.batch, optimizer=args.optimizer, lr=args.lr,
                         lr_schedule="none", seed=args.seed, progress=False)
    trainer = Trainer(model, corpus.train, None, config)
    print(f"{spec} floor {floor:.1f}, unigram model {unigram_ppl:.1f} ({unigram_ppl / floor:.2f}x); "
          f"{args.output}, {args.optimizer} lr {args.lr}, batch {args.batch}, bias init {args.bias_init}", flush=True)
    start = time.perf_counter()
    for steps in (int(s) for s in args.evals.split(",")):
        trainer.config = dataclasses.replace(trainer.config, max_steps=steps)
        trainer.fit()
        ppl = float(trainer.evaluate(test))
        print(f"  step {trainer.step:6d}  tokens {trainer.tokens:9,d}  test ppl {ppl:9.1f}  {ppl / floor:5.2f}x floor"
              f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
