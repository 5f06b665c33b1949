"""``bigvocab bench --word2vec``: bigvocab.Word2Vec against gensim, speed and quality, in one run.

Speed: words/s of ``train()`` (the vocabulary is built first and not timed; the engine is
compiled before the first timing, as gensim's Cython is) for skip-gram/CBOW x negative
sampling/hierarchical softmax, at each thread count, plus HogBatch for skip-gram + negative
sampling. Each repetition times bigvocab and gensim back to back, alternating which goes first,
and the speed-up is the median of the per-repetition ratios (:func:`paired_speedup`): on a
shared machine the absolute words/s drift, the paired ratio much less.

Quality (with ``--brown DIR``): each combination trained for gensim's 5 epochs on one thread
with seeds 1, 2, 3 by both libraries, on the same sentences (Brown's first 80% of words, cut at
the line ends, case kept), scored by the same evaluators (WordSim-353 and SimLex-999 Spearman,
3CosAdd analogies over the 30,000 most frequent words) from ``DIR/../eval``.

Without ``--brown`` the corpus is sentences of the synthetic language (speed only).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bigvocab.bench.harness.timing import paired_speedup
from bigvocab.outputs.engine import HIERARCHICAL_SOFTMAX, NEGATIVE_SAMPLING
from bigvocab.word2vec import Word2Vec


def _row(sg: int, hs: int, hogbatch: bool = False) -> tuple[str, int, int, bool]:
    """(label, sg, hs, hogbatch): the label names the model and word2vec's update (its engine kind)."""
    update = HIERARCHICAL_SOFTMAX if hs else NEGATIVE_SAMPLING
    return f"{'sg' if sg else 'cbow'} + {update}{', HogBatch' if hogbatch else ''}", sg, hs, hogbatch


#: (label, sg, hs, hogbatch) rows of the speed table ...
SPEED_ROWS = (_row(1, 0), _row(1, 0, hogbatch=True), _row(1, 1), _row(0, 0), _row(0, 1))
#: ... and of the quality table.
QUALITY_ROWS = SPEED_ROWS
EVAL_FILES = {"ws353": "wordsim353.tsv", "simlex": "simlex999.txt", "analogy": "questions-words.txt"}


def brown_sentences(brown: Path) -> list[list[str]]:
    """Brown's training split (first 80% of the words, all of them), one list per line."""
    from bigvocab.data.corpora import load_corpus

    corpus = load_corpus(f"brown:{brown}", progress=False)
    words, eos = corpus.vocab.words, corpus.vocab.index("</s>")
    sentences: list[list[str]] = []
    current: list[str] = []
    for i in corpus.stream("train").tolist():
        if i == eos:
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(words[i])
    if current:
        sentences.append(current)
    return sentences


def synthetic_sentences(tokens: int = 1_000_000, length: int = 20) -> list[list[str]]:
    from bigvocab.data.synthetic import SyntheticLanguage

    words = [f"w{i}" for i in SyntheticLanguage(20000, 200, seed=0).sample(tokens).tolist()]
    return [words[i : i + length] for i in range(0, len(words), length)]


def _options(sg: int, hs: int, workers: int, seed: int) -> dict[str, Any]:
    return dict(
        vector_size=100,
        window=5,
        min_count=5,
        sample=1e-3,
        alpha=0.025,
        min_alpha=1e-4,
        sg=sg,
        hs=hs,
        negative=0 if hs else 5,
        workers=workers,
        seed=seed,
    )


def _trainer(
    library: str, sg: int, hs: int, hogbatch: bool, workers: int, seed: int, sentences
) -> Callable[[int], Any]:
    """A model with its vocabulary built, and a function training it for some epochs."""
    if library == "gensim":
        from gensim.models import Word2Vec as GensimWord2Vec

        model = GensimWord2Vec(**_options(sg, hs, workers, seed))
    else:
        model = Word2Vec(**_options(sg, hs, workers, seed), hogbatch=hogbatch, progress=False)
    model.build_vocab(sentences)

    def train(epochs: int):
        model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
        return model

    return train


def _gensim_available() -> bool:
    try:
        import gensim  # noqa: F401
    except ImportError:
        return False
    return True


def speed_table(sentences, threads=(1, 2), repeats: int = 3, epochs: int = 1, log: Callable[[str], None] = print):
    """One row per (combination, threads): median words/s of each library and the paired ratio."""
    words = sum(len(s) for s in sentences) * epochs
    with_gensim = _gensim_available()
    _trainer("bigvocab", 1, 0, False, 1, 1, sentences[:50])(1)  # compile the engine first (cached on disk)
    rows = []
    for label, sg, hs, hogbatch in SPEED_ROWS:
        for workers in threads:
            seconds: dict[str, list[float]] = {"bigvocab": [], "gensim": []}
            for rep in range(repeats):
                order = ["bigvocab", "gensim"] if with_gensim else ["bigvocab"]
                for library in order if rep % 2 == 0 else order[::-1]:
                    train = _trainer(library, sg, hs, hogbatch, workers, 1 + rep, sentences)
                    start = time.perf_counter()
                    train(epochs)
                    seconds[library].append(time.perf_counter() - start)
            row = {
                "combination": label,
                "threads": workers,
                "words": words,
                "bigvocab_words_per_s": words / statistics.median(seconds["bigvocab"]),
                "seconds": seconds,
            }
            if with_gensim:
                ratio = paired_speedup(seconds["gensim"], seconds["bigvocab"])
                row.update(gensim_words_per_s=words / statistics.median(seconds["gensim"]), speedup=ratio.to_dict())
            rows.append(row)
            log(_speed_line(row))
    return rows


def _speed_line(row: dict) -> str:
    line = f"{row['combination']:<20} {row['threads']} thr  bigvocab {row['bigvocab_words_per_s']:>10,.0f} w/s"
    if "speedup" in row:
        s = row["speedup"]
        line += (
            f"  gensim {row['gensim_words_per_s']:>10,.0f} w/s  ratio {s['median']:.2f}x "
            f"[{s['min']:.2f}-{s['max']:.2f}]"
        )
    return line


def _scores(wv, eval_dir: Path) -> dict[str, float]:
    from bigvocab.evaluate import WordVectors, evaluate_analogies, evaluate_similarity

    vectors = WordVectors(list(wv.index_to_key), torch.as_tensor(wv.vectors))
    return {
        "ws353": evaluate_similarity(vectors, eval_dir / EVAL_FILES["ws353"]).spearman,
        "simlex": evaluate_similarity(vectors, eval_dir / EVAL_FILES["simlex"]).spearman,
        "analogy": evaluate_analogies(vectors, eval_dir / EVAL_FILES["analogy"], 30000).accuracy,
    }


def quality_table(sentences, eval_dir: Path, seeds=(1, 2, 3), epochs: int = 5, log: Callable[[str], None] = print):
    """Per combination and library: the three scores of each seed (5 epochs, one thread)."""
    libraries = ["bigvocab", "gensim"] if _gensim_available() else ["bigvocab"]
    rows = []
    for label, sg, hs, hogbatch in QUALITY_ROWS:
        row: dict[str, Any] = {"combination": label}
        for library in libraries:
            if library == "gensim" and hogbatch:
                continue
            runs = [
                _scores(_trainer(library, sg, hs, hogbatch, 1, seed, sentences)(epochs).wv, eval_dir) for seed in seeds
            ]
            row[library] = {metric: [run[metric] for run in runs] for metric in EVAL_FILES}
            log(
                f"{label:<20} {library:<8} "
                + "  ".join(f"{m} " + "/".join(f"{v:.3f}" for v in row[library][m]) for m in EVAL_FILES)
            )
        rows.append(row)
    return rows


def markdown(speed: list[dict], quality: list[dict]) -> str:
    """The README tables."""
    lines = [
        "| combination | threads | bigvocab words/s | gensim words/s | speed-up (median [min-max]) |",
        "|---|---|---|---|---|",
    ]
    for row in speed:
        s = row.get("speedup")
        gensim = f"{row['gensim_words_per_s']:,.0f}" if s else "n/a"
        ratio = f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]" if s else "n/a"
        lines.append(
            f"| {row['combination']} | {row['threads']} | {row['bigvocab_words_per_s']:,.0f} | {gensim} | {ratio} |"
        )
    if quality:
        lines += [
            "",
            "| combination | library | WS-353 (mean ± sd) | SimLex-999 | analogy | per seed (WS / SL / an) |",
            "|---|---|---|---|---|---|",
        ]
        for row in quality:
            for library in ("bigvocab", "gensim"):
                if library not in row:
                    continue
                values = row[library]
                cells = [f"{statistics.mean(values[m]):.3f} ± {statistics.stdev(values[m]):.3f}" for m in EVAL_FILES]
                seeds = "; ".join(
                    " / ".join(f"{values[m][i]:.3f}" for m in EVAL_FILES) for i in range(len(values["ws353"]))
                )
                lines.append(f"| {row['combination']} | {library} | " + " | ".join(cells) + f" | {seeds} |")
    return "\n".join(lines) + "\n"


def _print(text: str) -> None:
    print(text, flush=True)


def run_word2vec_bench(
    brown: Path | None, out: Path | None, repeats: int = 3, log: Callable[[str], None] = _print
) -> dict:
    """Run both parts, write ``word2vec.json`` and ``word2vec.md`` under ``out`` (if given), return
    the results; lines go to ``log``."""
    torch.set_num_threads(1)
    sentences = brown_sentences(brown) if brown is not None else synthetic_sentences()
    log(
        f"corpus: {'brown:' + str(brown) if brown else 'synthetic'}, {len(sentences):,} sentences, "
        f"{sum(map(len, sentences)):,} words; gensim {'installed' if _gensim_available() else 'absent'}"
    )
    started = time.perf_counter()
    speed = speed_table(sentences, repeats=repeats, log=log)
    eval_dir = brown.parent / "eval" if brown is not None else None
    quality = quality_table(sentences, eval_dir, log=log) if eval_dir is not None and eval_dir.is_dir() else []
    results = {
        "corpus": str(brown) if brown else "synthetic",
        "speed": speed,
        "quality": quality,
        "wall_seconds": time.perf_counter() - started,
    }
    log(markdown(speed, quality))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "word2vec.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        (out / "word2vec.md").write_text(markdown(speed, quality), encoding="utf-8")
        log(f"wrote {out / 'word2vec.json'} and {out / 'word2vec.md'}")
    return results
