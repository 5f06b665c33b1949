"""Start this run's journal from the speed phase of session 30 (`../bench-full-speed-s30`).

That run measured every speed row of ``bench --full`` (V = 10k, 100k, 1M) on this kind of machine
on code 9b6ffc3, with ``--skip-quality``. Its rows, limits and phase times become piece 1 of this
run; ``bench --full --brown ... --resume`` then measures only the quality rows and the word2vec
rows (those of session 30 ran without ``--brown``, so they are measured again with the Brown
similarity sets). Run from the repository root:

    python results/bench-full-2026-11-30/seed_journal.py
"""

import json
from pathlib import Path

from bigvocab.bench.journal import JOURNAL_NAME, VERSION, _measured_settings
from bigvocab.bench.options import add_bench_arguments, config_from_args
from bigvocab.cli import Parser

OUT = Path("results/bench-full-2026-11-30")
SPEED = Path("results/bench-full-speed-s30/results.json")
ARGS = ["--full", "--brown", "../shared/data/brown", "--out", str(OUT), "--no-progress"]


def main() -> None:
    parser = Parser(prog="bigvocab bench")
    add_bench_arguments(parser)
    config = config_from_args(parser.parse_args(ARGS))
    speed = json.loads(SPEED.read_text())
    phases = {name: seconds for name, seconds in speed["phase_seconds"].items() if name != "word2vec"}
    piece = dict(speed["pieces"][0], seconds=sum(phases.values()))
    state = {
        "version": VERSION, "config": _measured_settings(config), "pieces": [piece], "speed": speed["speed"],
        "memory": {}, "matmul": speed["matmul"], "bandwidth": speed["bandwidth"], "quality": [],
        "word2vec": None, "phase_seconds": phases,
    }
    path = OUT / JOURNAL_NAME
    if path.exists():
        raise SystemExit(f"{path} exists: this run has started")
    path.write_text(json.dumps(state, indent=1) + "\n")
    print(f"wrote {path}: {len(state['speed'])} speed rows from {SPEED}, {piece['seconds']:.0f} s")


if __name__ == "__main__":
    main()
