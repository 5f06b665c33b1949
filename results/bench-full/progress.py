"""The quality rows of this run beside the same rows of the run it replaced.

For each finished (corpus, layer): tokens seen and exact test perplexity / floor at the 360 s
budget here and in ``results/bench-full-2026-11-28``, the run this one replaces (its synthetic
rows came from pieces on an Intel Xeon at V = 10k and on an AMD EPYC at V = 100k), and here the
checkpoint the validation split picks.
While the run went on it read the journal (printing ``progress.log`` after each piece); the bench
removed the journal when the run finished, so it now reads ``results.json``. Run from the
repository root:

    python results/bench-full/progress.py
"""

import json
from pathlib import Path

from bigvocab.bench.rows import QualityRow

HERE = Path("results/bench-full")
BEFORE = Path("results/bench-full-2026-11-28/results.json")


def quality_rows(path: Path) -> dict[tuple[str, str], QualityRow]:
    rows = json.loads(path.read_text())["quality"]
    return {(r["dataset"], r["approach"]): QualityRow.from_dict(r) for r in rows}


def shown(row: QualityRow | None) -> str:
    if row is None or row.status != "ok":
        return f"{'-':>24}"
    ratio = f" ({row.ppl_ratio:.2f}x)" if row.ppl_ratio is not None else ""
    return f"{row.test_ppl:>9.1f}{ratio:<10} {row.tokens_seen / 1e6:>5.2f}M"


def kept(row: QualityRow) -> str:
    point = row.best_on_validation()
    return "-" if point is None else f"{point.test_ppl:.1f} at {point.budget_seconds:.0f} s"


def main() -> None:
    source = HERE / "results.json"
    now, before = quality_rows(source), quality_rows(BEFORE)
    print(f"from {source}; before: {BEFORE}")
    print(f"{'corpus':<19} {'layer':<17} {'before: ppl at 360 s, tokens':>28} {'now: ppl at 360 s, tokens':>26}  kept by validation")
    for (dataset, approach), row in now.items():
        print(f"{dataset:<19} {approach:<17} {shown(before.get((dataset, approach))):>28} {shown(row):>26}  {kept(row)}")


if __name__ == "__main__":
    main()
