"""The V = 1M rows of session 28's three runs and of this folder's two held to one limit: the best
matrix-multiply rate and the best of each bandwidth (on the 977 MiB table) that any of the five
measured (``../bench-speed-s28/common_limit.report``).

    python results/bench-speed-s29/common_limit.py   # common_limit.log
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
S28 = HERE.parent / "bench-speed-s28"
sys.path.insert(0, str(S28))
from common_limit import report  # noqa: E402  (results/bench-speed-s28/common_limit.py)

RUNS = {
    "s28 first (d34ad39)": S28 / "results.json",
    "s28 second (d34ad39)": S28 / "second-1m" / "results.json",
    "s28 after the hook (870b968)": S28 / "after-hook-1m" / "results.json",
    "s29 before (1a81fe1)": HERE / "before" / "results.json",
    "s29 after (66fdf4e)": HERE / "after" / "results.json",
}

if __name__ == "__main__":
    report(RUNS)
