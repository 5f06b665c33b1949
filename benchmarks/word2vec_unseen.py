"""bigvocab.Word2Vec against gensim on corpora the project was never tuned on: quality and speed.

For each corpus, each of the four combinations (skip-gram / CBOW x negative sampling /
hierarchical softmax) and each seed, both libraries train on the same sentences with gensim's
defaults (5 epochs, one thread), taking turns (bigvocab, then gensim, seed after seed), and the
same evaluator scores both: Spearman's rho on WS-353 and SimLex-999 (the pairs whose two words are
in the vocabulary). Each training is timed, so the words/s ratio is paired and alternating.

The criterion (issue "gensim users switch by changing one import"): bigvocab's mean is no lower
than gensim's mean minus half of gensim's seed-to-seed standard deviation.

    python benchmarks/word2vec_unseen.py --eval PATH/TO/eval --out results/word2vec-unseen

Corpora default to the two text files gensim ships with its tests (``lee_background.cor``, 60k
words of news; ``head500.noblanks.cor``, 331k stemmed words of Wikipedia), lowercased and cut
into words of letters; any text file (one document a line) can be given with ``--corpus``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import time
from pathlib import Path

import torch

from bigvocab import Word2Vec
from bigvocab.evaluate import WordVectors, evaluate_similarity

COMBINATIONS = {"skip-gram + neg": (1, 0), "skip-gram + hs": (1, 1), "CBOW + neg": (0, 0), "CBOW + hs": (0, 1)}
EVAL_FILES = {"ws353": "wordsim353.tsv", "simlex": "simlex999.txt"}
GENSIM_FILES = ("lee_background.cor", "head500.noblanks.cor")


def read_corpus(path: Path) -> list[list[str]]:
    """One sentence per line: the lowercased runs of letters."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return [words for line in handle if (words := re.findall(r"[a-z]+", line.lower()))]


def options(sg: int, hs: int, seed: int, epochs: int) -> dict:
    return dict(sg=sg, hs=hs, negative=0 if hs else 5, seed=seed, workers=1, epochs=epochs)


def scores(index_to_key, vectors, eval_dir: Path) -> dict[str, float]:
    words = WordVectors(list(index_to_key), torch.as_tensor(vectors))
    return {name: evaluate_similarity(words, eval_dir / file).spearman for name, file in EVAL_FILES.items()}


def train(library: str, sentences, sg: int, hs: int, seed: int, epochs: int, eval_dir: Path) -> tuple[dict, float]:
    """(scores, words/s of train()) of one model."""
    if library == "gensim":
        from gensim.models import Word2Vec as GensimWord2Vec

        model = GensimWord2Vec(**options(sg, hs, seed, epochs))
    else:
        model = Word2Vec(**options(sg, hs, seed, epochs), progress=False)
    model.build_vocab(sentences)
    start = time.perf_counter()
    model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    seconds = time.perf_counter() - start
    return scores(model.wv.index_to_key, model.wv.vectors, eval_dir), model.corpus_total_words * epochs / seconds


def summary(rows: list[dict]) -> list[dict]:
    """Per corpus and combination: mean and sd of each score, the criterion, the median speed-up."""
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        for combination in COMBINATIONS:
            runs = [r for r in rows if r["corpus"] == corpus and r["combination"] == combination]
            if not runs:
                continue
            line: dict = {"corpus": corpus, "combination": combination, "seeds": len(runs) // 2}
            for metric in EVAL_FILES:
                for library in ("bigvocab", "gensim"):
                    values = [r[metric] for r in runs if r["library"] == library]
                    line[f"{library}_{metric}_mean"] = statistics.fmean(values)
                    line[f"{library}_{metric}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
                bound = line[f"gensim_{metric}_mean"] - line[f"gensim_{metric}_sd"] / 2
                line[f"{metric}_ok"] = line[f"bigvocab_{metric}_mean"] >= bound
            ratios = [
                b["words_per_s"] / g["words_per_s"]
                for b, g in zip(
                    [r for r in runs if r["library"] == "bigvocab"], [r for r in runs if r["library"] == "gensim"]
                )
            ]
            line["speedup_median"], line["speedup_min"], line["speedup_max"] = (
                statistics.median(ratios),
                min(ratios),
                max(ratios),
            )
            out.append(line)
    return out


def markdown(lines: list[dict]) -> str:
    head = (
        "| corpus | combination | WS-353 bigvocab / gensim | SimLex-999 bigvocab / gensim | criterion | "
        "speed-up, 1 thread (median [min-max]) |\n|---|---|---|---|---|---|\n"
    )

    def cell(line: dict, metric: str) -> str:
        return " / ".join(
            f"{line[f'{lib}_{metric}_mean']:.3f} ± {line[f'{lib}_{metric}_sd']:.3f}" for lib in ("bigvocab", "gensim")
        )

    body = "".join(
        f"| {line['corpus']} | {line['combination']} | {cell(line, 'ws353')} | {cell(line, 'simlex')} | "
        f"{'met' if line['ws353_ok'] and line['simlex_ok'] else 'MISSED'} | "
        f"{line['speedup_median']:.2f}x [{line['speedup_min']:.2f}-{line['speedup_max']:.2f}] |\n"
        for line in lines
    )
    return head + body


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, required=True, help="folder with wordsim353.tsv and simlex999.txt")
    parser.add_argument("--corpus", type=Path, action="append", help="a text file (default: gensim's two)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--combinations", default=",".join(COMBINATIONS), help="comma-separated")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.corpus:
        corpora = args.corpus
    else:
        from gensim.test.utils import datapath

        corpora = [Path(datapath(name)) for name in GENSIM_FILES]
    warm = read_corpus(corpora[0])[:50]
    for library in ("bigvocab", "gensim"):  # numba compiles the engine on its first call: not timed
        train(library, warm, 1, 0, 0, 1, args.eval)
    rows = []
    for path in corpora:
        sentences = read_corpus(path)
        for combination in args.combinations.split(","):
            sg, hs = COMBINATIONS[combination]
            for seed in range(1, args.seeds + 1):
                for library in ("bigvocab", "gensim"):  # taking turns: the load falls on both
                    result, speed = train(library, sentences, sg, hs, seed, args.epochs, args.eval)
                    run = {"corpus": path.name, "combination": combination, "seed": seed, "library": library}
                    rows.append({**run, **result, "words_per_s": speed})
                    print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "runs.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(summary(rows))
    (args.out / "table.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
