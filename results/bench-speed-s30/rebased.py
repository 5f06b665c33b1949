"""The V = 1M speed rows of session 28's three runs, session 29's two and this folder's run, held
to the declaration of distinct rows (``../distinct-row-cost``): each row's bytes are declared
again by today's code for the bench's own workload (seed 0, N = 1024, H = 256), its step time is
the run's, and its limit is the run's own rates and then the best rates any of the six measured.

    python results/bench-speed-s30/rebased.py   # rebased.log

(``declared_bytes`` also serves ``all_layers.py``.)
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

from bigvocab.bench.operations import make_workload
from bigvocab.bench.roofline import roofline_seconds
from bigvocab.bench.selection import candidate_by_label
from bigvocab.bench.side_data import build_layer, synthetic_side_data

HERE = Path(__file__).resolve().parent
S29 = HERE.parent / "bench-speed-s29"
VOCAB, KEY = 1_000_000, "1000000"


def earlier_runs() -> dict[str, Path]:
    """Session 29's list of runs (``../bench-speed-s29/common_limit.RUNS``: session 28's three
    and its own two), loaded by path since both folders name their script ``common_limit``."""
    spec = importlib.util.spec_from_file_location("s29_common_limit", S29 / "common_limit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RUNS


RUNS = {**earlier_runs(), "s30 (c52bd3a)": HERE / "run" / "results.json"}


def declared_bytes(labels: set[str], config: dict, vocab: int = VOCAB) -> dict[str, tuple[float, float]]:
    """(bytes, gathered bytes) of a training step of each labelled layer at V = ``vocab``,
    declared by today's code for the bench's workload of ``config`` (a run's ``config``)."""
    side = synthetic_side_data(vocab, seed=config["seed"])
    target = make_workload(side.counts, config["hidden"], config["batch"], 1, seed=config["seed"], device=torch.device("cpu")).target
    declared = {}
    for label in sorted(labels):
        torch.manual_seed(config["seed"])
        layer, _ = build_layer(candidate_by_label(label), config["hidden"], vocab, side, num_samples=config["num_samples"])
        cost = layer.train_cost(target)
        declared[label] = (cost.bytes, cost.gathered)
    return declared


def main() -> None:
    runs = {name: json.loads(path.read_text()) for name, path in RUNS.items()}
    rates = [run["bandwidth"][KEY] for run in runs.values()]
    common = {key: max(rate[key] for rate in rates) for key in rates[0]}
    common["best_gflops"] = max(run["matmul"]["best_gflops"] for run in runs.values())
    rows = {name: [r for r in run["speed"] if r["vocab_size"] == VOCAB and r["roofline_fraction"] is not None] for name, run in runs.items()}
    config = runs["s30 (c52bd3a)"]["config"]
    for run in runs.values():
        assert all(run["config"][key] == config[key] for key in ("seed", "hidden", "batch", "num_samples"))
    declared = declared_bytes({r["approach"] for run_rows in rows.values() for r in run_rows}, config)
    print("common limit: " + ", ".join(f"{k} {v:.1f}" for k, v in common.items()))
    print("fractions: as the run reported (per-pair bytes before s30) -> distinct rows, own limit -> distinct rows, common limit")
    for name, run in runs.items():
        own = {**run["bandwidth"][KEY], "best_gflops": run["matmul"]["best_gflops"]}
        print(f"\n{name}: gather {own['gather_gbps']:.1f} GB/s, stream {own['stream_gbps']:.1f} GB/s, matmul {own['best_gflops']:.1f} GFLOP/s")
        for row in rows[name]:
            step = row["roofline_seconds"] / row["roofline_fraction"]
            moved, gathered = declared[row["approach"]]
            fractions = [roofline_seconds(row["required_flops"], moved, gathered, limit) / step for limit in (own, common)]
            print(f"  {row['approach']:<18} step {step * 1e3:9.2f} ms  {row['roofline_fraction']:6.1%} -> "
                  f"{fractions[0]:6.1%} own, {fractions[1]:6.1%} common")


if __name__ == "__main__":
    main()
