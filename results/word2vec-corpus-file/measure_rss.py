"""Peak resident memory of ``bigvocab.Word2Vec(corpus_file=...)`` at 1M, 10M and 30M words.

Each measurement runs in a fresh child process and reads its peak resident memory from
``VmHWM`` in /proc/self/status (per address space, so unlike ``ru_maxrss`` it does not carry the
parent's peak across fork and exec) -- Linux only. The child builds the
vocabulary, write and memory-map the stream, train one epoch of CBOW + negative sampling on one
thread. ``--no-release`` turns off the release of passed pages (``RELEASE_BYTES`` set beyond
the stream's size), for comparison. The corpora are sentences of 20 words of the synthetic
language (V = 20,000), written to ``--dir``.

    PYTHONPATH=src python results/word2vec-corpus-file/measure_rss.py --dir /tmp/w2v-rss
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SIZES = (1_000_000, 10_000_000, 30_000_000)


def write_corpus(path: Path, words: int, length: int = 20, block: int = 1_000_000) -> None:
    from bigvocab.data.synthetic import SyntheticLanguage

    language = SyntheticLanguage(20000, 200, seed=0)
    partial = path.with_suffix(".part")
    with open(partial, "w") as handle:
        for start in range(0, words, block):
            ids = language.sample(min(block, words - start)).tolist()
            handle.write("".join(" ".join(f"w{i}" for i in ids[j : j + length]) + "\n"
                                 for j in range(0, len(ids), length)))
    partial.rename(path)


def rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(corpus: Path, release: bool) -> None:
    from bigvocab import Word2Vec
    from bigvocab.word2vec import corpus as corpus_io

    if not release:
        corpus_io.RELEASE_BYTES = 1 << 62
    baseline = rss_mb()
    started = time.perf_counter()
    model = Word2Vec(corpus_file=str(corpus), vector_size=50, sg=0, epochs=1, workers=1, progress=False)
    stream_mb = (Path(model._tmp.name) / "stream.i32").stat().st_size / 2**20
    print(json.dumps({"words": model.corpus_total_words, "release": release, "rss_after_imports_mb": round(baseline),
                      "peak_rss_mb": round(rss_mb()), "stream_file_mb": round(stream_mb),
                      "seconds": round(time.perf_counter() - started, 1)}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/tmp/w2v-rss"))
    parser.add_argument("--child", type=Path)
    parser.add_argument("--no-release", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.child, not args.no_release)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = [(size, True) for size in SIZES] + [(SIZES[-1], False)]
    for size, release in runs:
        corpus = args.dir / f"corpus-{size // 1_000_000}M.txt"
        if not corpus.exists():
            write_corpus(corpus, size)
        command = [sys.executable, __file__, "--child", str(corpus)] + ([] if release else ["--no-release"])
        print(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
