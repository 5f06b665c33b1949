"""Redraw a run's ``perplexity_vs_time.png`` from its ``results.json`` (after a change to the plot).

    python results/quality-full-preset/redraw.py RUN_DIR
"""
import json
import sys
from pathlib import Path

from bigvocab.bench.plots import write_plots
from bigvocab.bench.rows import CurvePoint, QualityRow

run = Path(sys.argv[1])
saved = json.loads((run / "results.json").read_text())
rows = [QualityRow(**{**row, "curve": [CurvePoint(**p) for p in row["curve"]]}) for row in saved["quality"]]
print(write_plots({"quality": rows}, run))
