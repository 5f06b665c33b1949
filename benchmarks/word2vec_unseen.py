"""bigvocab.Word2Vec against gensim on corpora the project was never tuned on: quality and speed.

For each corpus, each of the four combinations (skip-gram / CBOW x negative sampling /
hierarchical softmax), each seed and each thread count, both libraries train on the same
sentences with gensim's defaults (5 epochs), taking turns (the first to go alternates seed after
seed), and the same evaluator scores both: Spearman's rho on WS-353 and SimLex-999 (the pairs
whose two words are in the vocabulary). The scores are those of the one-thread runs (Hogwild!
threads are not reproducible); each training is timed, so every words/s ratio is paired. The
load average is recorded with every run: on a shared machine a two-thread ratio measures the
other jobs as much as the libraries.

The criterion (issue "gensim users switch by changing one import"): bigvocab's mean is no lower
than gensim's mean minus half of gensim's seed-to-seed standard deviation.

    python benchmarks/word2vec_unseen.py --eval PATH/TO/eval --out results/word2vec-unseen

Corpora default to two files gensim ships with its tests: ``head500.noblanks.cor`` (331k stemmed
words of Wikipedia, one article a line; lowercased runs of letters) and the shortened English
Wikipedia dump ``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2`` (106
articles, 453k words as gensim's ``WikiCorpus`` tokenises them). An article is one sentence, cut
into pieces of at most 10,000 words: gensim drops the words of a sentence beyond its 10,000th
where bigvocab trains them, so longer sentences would give the libraries different corpora. Any
text file (one document a line) can be given with ``--corpus``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import time
from pathlib import Path

import torch

from bigvocab import Word2Vec
from bigvocab.evaluate import WordVectors, evaluate_similarity

COMBINATIONS = {"skip-gram + neg": (1, 0), "skip-gram + hs": (1, 1), "CBOW + neg": (0, 0), "CBOW + hs": (0, 1)}
EVAL_FILES = {"ws353": "wordsim353.tsv", "simlex": "simlex999.txt"}
LINES_FILE = "head500.noblanks.cor"
WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
#: gensim's (and word2vec.c's) longest sentence.
MAX_SENTENCE = 10000
THREADS = (1, 2)


def read_corpus(path: Path) -> list[list[str]]:
    """One sentence per line: the lowercased runs of letters."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return [words for line in handle if (words := re.findall(r"[a-z]+", line.lower()))]


def read_wiki(path: Path) -> list[list[str]]:
    """The articles of a Wikipedia XML dump as gensim's WikiCorpus tokenises them (one process)."""
    from gensim.corpora import WikiCorpus

    return list(WikiCorpus(str(path), processes=1, dictionary={}).get_texts())


def pieces(sentences: list[list[str]]) -> list[list[str]]:
    """Every sentence cut into pieces of at most MAX_SENTENCE words."""
    return [s[i : i + MAX_SENTENCE] for s in sentences for i in range(0, len(s), MAX_SENTENCE)]


def options(sg: int, hs: int, seed: int, epochs: int, workers: int) -> dict:
    return dict(sg=sg, hs=hs, negative=0 if hs else 5, seed=seed, workers=workers, epochs=epochs)


def scores(index_to_key, vectors, eval_dir: Path) -> dict[str, float]:
    words = WordVectors(list(index_to_key), torch.as_tensor(vectors))
    return {name: evaluate_similarity(words, eval_dir / file).spearman for name, file in EVAL_FILES.items()}


def train(
    library: str, sentences, sg: int, hs: int, seed: int, epochs: int, workers: int, eval_dir: Path
) -> tuple[dict, float]:
    """(scores, words/s of train()) of one model."""
    if library == "gensim":
        from gensim.models import Word2Vec as GensimWord2Vec

        model = GensimWord2Vec(**options(sg, hs, seed, epochs, workers))
    else:
        model = Word2Vec(**options(sg, hs, seed, epochs, workers), progress=False)
    model.build_vocab(sentences)
    start = time.perf_counter()
    model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    seconds = time.perf_counter() - start
    return scores(model.wv.index_to_key, model.wv.vectors, eval_dir), model.corpus_total_words * epochs / seconds


def summary(rows: list[dict]) -> list[dict]:
    """Per corpus and combination: mean and sd of each score (one-thread runs), the criterion, and
    per thread count the median [min-max] of the paired speed-ups and the median load average."""
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        for combination in COMBINATIONS:
            runs = [r for r in rows if r["corpus"] == corpus and r["combination"] == combination]
            if not runs:
                continue
            single = [r for r in runs if r["workers"] == 1]
            line: dict = {"corpus": corpus, "combination": combination, "seeds": len(single) // 2}
            for metric in EVAL_FILES:
                for library in ("bigvocab", "gensim"):
                    values = [r[metric] for r in single if r["library"] == library]
                    line[f"{library}_{metric}_mean"] = statistics.fmean(values)
                    line[f"{library}_{metric}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
                bound = line[f"gensim_{metric}_mean"] - line[f"gensim_{metric}_sd"] / 2
                line[f"{metric}_ok"] = line[f"bigvocab_{metric}_mean"] >= bound
            for workers in dict.fromkeys(r["workers"] for r in runs):
                paired = [r for r in runs if r["workers"] == workers]
                speed = {(r["seed"], r["library"]): r["words_per_s"] for r in paired}
                ratios = [speed[seed, "bigvocab"] / speed[seed, "gensim"] for seed, lib in speed if lib == "gensim"]
                line[f"speedup_{workers}"] = (statistics.median(ratios), min(ratios), max(ratios))
                line[f"load_{workers}"] = statistics.median(r["load"] for r in paired)
            out.append(line)
    return out


def markdown(lines: list[dict]) -> str:
    threads = sorted({int(key.split("_")[1]) for line in lines for key in line if key.startswith("speedup_")})
    head = (
        "| corpus | combination | WS-353 bigvocab / gensim | SimLex-999 bigvocab / gensim | criterion | "
        + " | ".join(f"speed-up, {t} thread{'s' if t > 1 else ''} (median [min-max]; load)" for t in threads)
        + " |\n|"
        + "---|" * (5 + len(threads))
        + "\n"
    )

    def cell(line: dict, metric: str) -> str:
        return " / ".join(
            f"{line[f'{lib}_{metric}_mean']:.3f} ± {line[f'{lib}_{metric}_sd']:.3f}" for lib in ("bigvocab", "gensim")
        )

    def speed(line: dict, workers: int) -> str:
        if f"speedup_{workers}" not in line:
            return "n/a"
        median, low, high = line[f"speedup_{workers}"]
        return f"{median:.2f}x [{low:.2f}-{high:.2f}]; {line[f'load_{workers}']:.1f}"

    body = "".join(
        f"| {line['corpus']} | {line['combination']} | {cell(line, 'ws353')} | {cell(line, 'simlex')} | "
        f"{'met' if line['ws353_ok'] and line['simlex_ok'] else 'MISSED'} | "
        + " | ".join(speed(line, t) for t in threads)
        + " |\n"
        for line in lines
    )
    return head + body


def corpora(given: list[Path] | None) -> dict[str, list[list[str]]]:
    """name -> sentences: the given text files, or gensim's two test corpora."""
    if given:
        return {path.name: pieces(read_corpus(path)) for path in given}
    from gensim.test.utils import datapath

    return {
        LINES_FILE: pieces(read_corpus(Path(datapath(LINES_FILE)))),
        "enwiki (shortened dump)": pieces(read_wiki(Path(datapath(WIKI_DUMP)))),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, required=True, help="folder with wordsim353.tsv and simlex999.txt")
    parser.add_argument("--corpus", type=Path, action="append", help="a text file (default: gensim's two)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--combinations", default=",".join(COMBINATIONS), help="comma-separated")
    parser.add_argument("--threads", default=",".join(map(str, THREADS)), help="comma-separated; 1 gives the scores")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    if 1 not in threads:
        parser.error("--threads must include 1: the scores are those of the one-thread runs")
    texts = corpora(args.corpus)
    warm = next(iter(texts.values()))[:50]
    for library in ("bigvocab", "gensim"):  # numba compiles the engine on its first call: not timed
        train(library, warm, 1, 0, 0, 1, 1, args.eval)
    rows = []
    for name, sentences in texts.items():
        for combination in args.combinations.split(","):
            sg, hs = COMBINATIONS[combination]
            for seed in range(1, args.seeds + 1):
                for workers in threads:
                    order = ("bigvocab", "gensim") if seed % 2 else ("gensim", "bigvocab")
                    for library in order:  # taking turns: the load falls on both
                        result, speed = train(library, sentences, sg, hs, seed, args.epochs, workers, args.eval)
                        run = {"corpus": name, "combination": combination, "seed": seed, "workers": workers}
                        load = os.getloadavg()[0]
                        rows.append({**run, "library": library, **result, "words_per_s": speed, "load": load})
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
