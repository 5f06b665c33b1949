"""Validation perplexity by epoch, one line per row (mean over its seeds, band from min to max),
from the ``NAME-sSEED-metrics.jsonl`` files that ``run.sh`` runs leave (copied into one folder).

    python results/brown-nnlm/plot_valid.py results/brown-nnlm/seeds OUT.png [--rows NAME ...]

``--rows`` plots those rows only (default: every row found; the palette has 20 colours).
"""
from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Optional


def curves(folder: Path) -> dict[str, list[list[float]]]:
    """{row name: [valid ppl by epoch] per seed}."""
    rows: dict[str, list[list[float]]] = collections.defaultdict(list)
    for path in sorted(folder.glob("*-s[0-9]*-metrics.jsonl")):
        name = path.name.rsplit("-s", 1)[0]
        events = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
        rows[name].append([e["valid_ppl"] for e in events if e.get("event") == "epoch"])
    return rows


def main(folder: Path, out: Path, names: Optional[list[str]] = None) -> None:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("plot_valid.py needs matplotlib: pip install 'bigvocab[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    found = curves(folder)
    missing = sorted(set(names or []) - set(found))
    if missing:
        raise SystemExit(f"no metrics for {', '.join(missing)} in {folder}")
    rows = [(name, found[name]) for name in names] if names else sorted(found.items())
    if len(rows) > 20:
        raise SystemExit(f"{len(rows)} rows, more than the 20 colours: choose some with --rows")
    colours = plt.cm.tab20(range(len(rows)))  # one distinct colour per row, up to 20 rows
    for (name, seeds), colour in zip(rows, colours):
        epochs = min(len(s) for s in seeds)  # the epochs every seed reached
        x = range(1, epochs + 1)
        by_epoch = [[s[e] for s in seeds] for e in range(epochs)]
        mean = [sum(v) / len(v) for v in by_epoch]
        style = "--" if name.startswith("lstm") else "-"
        axis.plot(x, mean, style, marker="o", color=colour, label=f"{name} ({len(seeds)} seed{'s' * (len(seeds) > 1)})")
        if len(seeds) > 1:
            axis.fill_between(x, [min(v) for v in by_epoch], [max(v) for v in by_epoch], color=colour, alpha=0.2)
    axis.set_xlabel("epoch")
    axis.set_ylabel("exact validation perplexity")
    axis.set_ylim(top=260)
    axis.set_title("Brown: NNLM (solid) and LSTM (dashed) rows, mean over seeds, band min-max")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", nargs="+", metavar="NAME", help="the rows to plot, in this order")
    args = parser.parse_args()
    main(args.folder, args.out, args.rows)
