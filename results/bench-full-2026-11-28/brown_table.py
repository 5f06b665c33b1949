"""Print the Brown table of results/bench-full-2026-11-28/README.md ("Piece 5") from a results.json or journal.

Usage, from the repository root: ``python3 results/bench-full-2026-11-28/brown_table.py results/bench-full-2026-11-28/results.json``.
Test perplexity at each checkpoint, ``*`` at the checkpoint with the lowest validation perplexity,
rows ordered by the test perplexity of that checkpoint; epochs by the end of the budget in brackets.
"""

import json
import sys

rows = [r for r in json.load(open(sys.argv[1]))["quality"] if r["dataset"] == "brown-bengio"]


def kept(row: dict) -> dict:
    return min(row["curve"], key=lambda point: point["valid_ppl"])


print("| layer | 45 s | 90 s | 180 s | 360 s | kept (valid) |")
print("|---|---|---|---|---|---|")
for row in sorted(rows, key=lambda row: kept(row)["test_ppl"]):
    best = kept(row)
    cells = [f"{p['test_ppl']:,.1f}" + ("*" if p is best else "") for p in row["curve"]]
    print(
        f"| `{row['approach']}` ({row['epochs_seen']:.2g}) | " + " | ".join(cells)
        + f" | {best['budget_seconds']:g} s ({best['valid_ppl']:,.1f}) |"
    )
