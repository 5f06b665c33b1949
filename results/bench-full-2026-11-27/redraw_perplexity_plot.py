"""Redraw ``perplexity_vs_time.png`` from this run's ``results.json`` with the current plotting
code (the run's own figure had its legend over the curves and end labels below the axes).

    python results/bench-full-2026-11-27/redraw_perplexity_plot.py
"""
import json
from pathlib import Path

from bigvocab.bench.plots import write_plots
from bigvocab.bench.rows import QualityRow

here = Path(__file__).parent
record = json.loads((here / "results.json").read_text())
quality = [QualityRow.from_dict(row) for row in record["quality"]]
written, notes = write_plots({"quality": quality}, here)
print(*(written or notes), sep="\n")
