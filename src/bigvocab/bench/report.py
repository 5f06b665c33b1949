"""The files of a run: ``results.json`` (everything), ``results.csv`` (one line per measured
row) and ``report.md`` (the summary table in the shape of Ruder 2016's comparison, after Chen et
al. 2015, then the raw tables and the machine)."""

from __future__ import annotations

import csv
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bigvocab.bench.harness import formatting as fmt
from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.operations import FIT_STEPS
from bigvocab.bench.harness.rows import QualityRow, SpeedRow, json_safe
from bigvocab.bench.suites.recommend import ON_VALIDATION, TOLERANCE
from bigvocab.bench.suites.roofline import MAX_PROBE_TABLE_BYTES, probe_table_mib
from bigvocab.bench.suites.speed import WARMUP_BELOW_SECONDS
from bigvocab.files import atomic_write_text
from bigvocab.outputs.factory import reference_output
from bigvocab.registry import OUTPUTS

SUMMARY_COLUMNS = ["Approach", "Train speed-up", "Test speed-up", "PPL small vocab", "PPL large vocab", "Parameters %"]


def summarise(results: dict) -> list[dict]:
    """One line per approach: speed-ups and parameters at the largest V of the speed runs,
    perplexities on the first (small) and second (large) quality corpora."""
    speed = results.get("speed", [])
    quality = results.get("quality", [])
    largest = max((row.vocab_size for row in speed), default=None)
    datasets = list(dict.fromkeys(row.dataset for row in quality))
    summary = []
    for label in results["approaches"]:
        at_largest = next((r for r in speed if r.approach == label and r.vocab_size == largest), None)
        line: dict = {"approach": label, "speed_vocab": largest}
        if at_largest is not None:
            line.update(
                train_speedup=at_largest.speedup("train"),
                test_speedup=at_largest.speedup("log_softmax"),
                topk_speedup=at_largest.speedup("topk"),
                params_pct=at_largest.params_pct,
                speed_failed=at_largest.status == "error",
            )
        for slot, dataset in zip(("small", "large", "third"), datasets):
            found = next((r for r in quality if r.approach == label and r.dataset == dataset), None)
            line[f"ppl_{slot}_dataset"] = dataset
            line[f"ppl_{slot}"] = None if found is None else found.test_ppl
            line[f"ppl_{slot}_ratio"] = None if found is None else found.ppl_ratio
            line[f"ppl_{slot}_failed"] = found is not None and found.status == "error"
        failed = [(fmt.vocab(r.vocab_size), r) for r in speed] + [(r.dataset, r) for r in quality]
        errors = [f"{where}: {r.error}" for where, r in failed if r.approach == label and r.status == "error"]
        line["errors"] = "; ".join(errors)
        summary.append(line)
    return summary


def write_json(results: dict, path: Path) -> Path:
    return atomic_write_text(path, json.dumps(json_safe(results), indent=2, default=str) + "\n")


def write_csv(results: dict, path: Path) -> Path:
    """Speed and quality rows in one table (``phase`` tells them apart); the columns are the
    union of the rows' keys, in order of first appearance."""
    rows = [row.csv_record() for row in results.get("speed", []) + results.get("quality", [])]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _csv_value(row.get(key)) for key in columns})
    return path


def _csv_value(value):
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return "" if value is None else value


def reproduce_command(config: BenchConfig) -> str:
    """The ``bigvocab bench`` command line that repeats this run."""
    preset = BenchConfig.full() if config.mode == "full" else BenchConfig.quick()
    parts = ["bigvocab", "bench", f"--{config.mode}"]
    if config.outputs is not None:
        parts += ["--outputs", ",".join(config.outputs)]
    options: list[tuple[str, str, Callable[[Any], str]]] = [
        ("vocab_sizes", "--vocab-sizes", lambda sizes: ",".join(str(v) for v in sizes)),
        ("hidden", "--hidden", str),
        ("batch", "--batch", str),
        ("repeats", "--repeats", str),
        ("num_samples", "--num-samples", str),
        ("device", "--device", str),
        ("seed", "--seed", str),
    ]
    for field, flag, render in options:
        if getattr(config, field) != getattr(preset, field):
            parts += [flag, render(getattr(config, field))]
    if config.corpus is not None:
        parts += ["--corpus", config.corpus]
    if config.brown is not None:
        parts += ["--brown", str(config.brown)]
    parts += [flag for flag, on in (("--skip-speed", config.skip_speed), ("--skip-quality", config.skip_quality)) if on]
    if config.out is not None:
        parts += ["--out", str(config.out)]
    return " ".join(shlex.quote(part) for part in parts)


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines]
    return "\n".join(out)


def summary_table(results: dict) -> str:
    """The comparison table in the shape of Ruder (2016) / Chen et al. (2015)."""
    lines = []
    for line in results["summary"]:
        lines.append(
            [
                line["approach"],
                _or_error(fmt.speedup(line.get("train_speedup")), line.get("speed_failed")),
                _or_error(fmt.speedup(line.get("test_speedup")), line.get("speed_failed")),
                *(
                    _or_error(
                        fmt.perplexity(line.get(f"ppl_{slot}"), line.get(f"ppl_{slot}_ratio")),
                        line.get(f"ppl_{slot}_failed"),
                    )
                    for slot in ("small", "large")
                ),
                fmt.percent(line.get("params_pct"), 0),
            ]
        )
    return _table(SUMMARY_COLUMNS, lines)


def _or_error(text: str, failed: bool | None) -> str:
    """A missing figure of a row that failed reads "error" (the raw tables say why)."""
    return "error" if failed and text == fmt.MISSING else text


def speed_table(rows: list[SpeedRow]) -> str:
    header = [
        "V",
        "Approach",
        "Train speed-up [IQR]",
        "Train s/step",
        "log_softmax speed-up [IQR]",
        "Test rows N'",
        "Top-10 speed-up [IQR]",
        "Top-10 fitted [IQR] (p)",
        "Params",
        "Params %",
        "Peak step MiB",
        "Required GFLOP",
        "Achieved GFLOP/s",
        "% of matmul rate",
        "% of roofline",
        "Status",
    ]
    lines = []
    for row in rows:
        fraction = row.matmul_fraction
        required = row.required_flops
        lines.append(
            [
                fmt.vocab(row.vocab_size),
                row.approach,
                fmt.speedup_spread(row.timings.get("train")),
                fmt.number(row.train_seconds, 4),
                fmt.speedup_spread(row.timings.get("log_softmax")),
                str(row.eval_rows),
                fmt.speedup_spread(row.timings.get("topk")),
                _fitted_cell(row),
                fmt.number(row.params, 0),
                fmt.percent(row.params_pct),
                fmt.number(row.peak_step_mib),
                fmt.number(None if required is None else required / 1e9, 2)
                + ("" if str(row.flops_source or "formula") == "formula" else " (counted)"),
                fmt.number(row.achieved_gflops),
                fmt.percent(None if fraction is None else 100 * fraction),
                fmt.percent(None if row.roofline_fraction is None else 100 * row.roofline_fraction),
                _status_cell(row.status, row.error, row.memory_error),
            ]
        )
    return _table(header, lines)


def _fitted_cell(row: SpeedRow) -> str:
    """The fitted top-k speed-up with the mean target probability the fitting reached."""
    probability = row.topk_fitted_target_p
    timing = row.timings.get("topk_fitted")
    if timing is None:
        return fmt.MISSING
    return fmt.speedup_spread(timing) + ("" if probability is None else f" (p={probability:.2f})")


def quality_table(rows: list[QualityRow]) -> str:
    """One line per (corpus, layer): exact test perplexity at each time budget of its curve; ``*``
    marks the checkpoint with the lowest validation perplexity, where it was measured."""
    budgets = sorted({point.budget_seconds for row in rows for point in row.curve})
    header = ["Corpus", "Approach", "V", "Tokens trained (passes)"]
    header += [f"PPL at {budget:g} s" for budget in budgets] + ["Train s", "Eval s", "Status"]
    lines = []
    for row in rows:
        points = {point.budget_seconds: point for point in row.curve}
        kept = row.best_on_validation()
        lines.append(
            [
                row.dataset,
                row.approach,
                f"{row.vocab_size:,}",
                _tokens_cell(row),
                *(
                    fmt.perplexity(points[b].test_ppl, points[b].ppl_ratio) + ("*" if points[b] is kept else "")
                    if b in points
                    else fmt.MISSING
                    for b in budgets
                ),
                fmt.number(row.train_seconds),
                fmt.number(row.eval_seconds),
                _status_cell(row.status, row.error, None),
            ]
        )
    return _table(header, lines)


def recommendation_table(lines: list[dict]) -> str:
    header = [
        "Corpus",
        "V",
        "Time budget",
        "Model kept",
        "Lowest perplexity",
        f"Fastest within {100 * TOLERANCE:g}% of it",
        "Seed-to-seed spread",
    ]
    rows = [
        [
            line["dataset"],
            f"{line['vocab_size']:,}",
            f"{line['budget_seconds']:g} s",
            line["selection"],
            _best_cell(line) if line.get("ranked", True) else f"cannot rank: {line['verdict']}",
            f"{line['fastest']} (after {line['fastest_seconds']:.1f} s)" if line.get("ranked", True) else fmt.MISSING,
            fmt.MISSING if line.get("seed_spread") is None else f"{line['seed_spread']:.1%}",
        ]
        for line in lines
    ]
    return _table(header, rows)


def _best_cell(line: dict) -> str:
    checkpoint = line["best_checkpoint"]
    earlier = f", its {checkpoint:g} s checkpoint" if checkpoint < line["budget_seconds"] else ""
    return f"{line['best']} ({fmt.perplexity(line['best_ppl'], line['best_ratio'])}{earlier})"


def recommendation_lines(lines: list[dict]) -> list[str]:
    """The recommendation in words, one sentence per corpus: its longest budget's answer."""
    last = {line["dataset"]: line for line in lines}
    return [
        f"{dataset} (V = {line['vocab_size']:,}), {line['budget_seconds']:g} s of training: "
        + (
            f"{line['best']} ({fmt.perplexity(line['best_ppl'], line['best_ratio'])})"
            if line.get("ranked", True)
            else f"cannot rank: {line['verdict']}"
        )
        for dataset, line in last.items()
    ]


def _tokens_cell(row: QualityRow) -> str:
    if row.tokens_seen is None:
        return f"({row.train_tokens:,})"
    return f"{row.tokens_seen:,} ({row.epochs_seen or 0:.2g})"


def _status_cell(status: str, error: str, memory: str | None) -> str:
    status = (f"ok; {error}" if error else "ok") if status == "ok" else f"error: {error}"  # ok: skipped operations
    return status if not memory else f"{status} (memory: {memory})"


def machine_table(machine: dict) -> str:
    return _table(["", ""], [[key, str(value)] for key, value in machine.items()])


def matmul_table(matmul: dict) -> str:
    lines = [[f"{s['m']} x {s['k']} x {s['n']}", fmt.number(s["gflops"])] for s in matmul["shapes"]]
    return _table(["Product (m x k x n)", "GFLOP/s"], lines)


def bandwidth_table(bandwidth: dict, hidden: int) -> str:
    """The best bandwidths of the run for each V (``str(V)`` -> rates), gathers and scatters on a
    table of that V's (V, H) weight size."""
    lines = [
        [
            f"{int(vocab):,}",
            fmt.number(probe_table_mib(int(vocab), hidden)),
            fmt.number(rates["stream_gbps"]),
            fmt.number(rates["gather_gbps"]),
            fmt.number(rates["scatter_gbps"]),
        ]
        for vocab, rates in sorted(bandwidth.items(), key=lambda item: int(item[0]))
    ]
    headers = ["V", "table MiB", "streaming copy", "row gather (index_select)", "row scatter-add (index_add_)"]
    return _table(headers, lines)


def write_markdown(results: dict, config: BenchConfig, path: Path, *, plots: list[Path] | None = None) -> Path:
    speed, quality = results.get("speed", []), results.get("quality", [])
    parts = [
        f"# bigvocab bench ({config.mode})",
        f"Reproduce with `{reproduce_command(config)}`. Wall time {results['wall_seconds']:.0f} s.",
        "## Summary",
        _summary_caption(results, config),
        summary_table(results),
    ]
    if plots:
        parts.append("\n".join(f"![{plot.stem}]({plot.name})" for plot in plots))
    if speed:
        parts += ["## Speed (raw)", _speed_caption(config), speed_table(speed)]
        parts += ["## Dense matrix-multiply rate", matmul_table(results["matmul"])]
        if results.get("bandwidth"):
            parts += [
                "## Memory bandwidth (GB/s)",
                "Rows of H floats gathered from, and added into, random rows of a table with the (V, H) "
                f"weight's size (at most {MAX_PROBE_TABLE_BYTES >> 30} GiB), measured before and after each V's "
                "rows; the best of each.",
                bandwidth_table(results["bandwidth"], config.hidden),
            ]
    if quality:
        parts += ["## Quality (raw)", _quality_caption(config), quality_table(quality)]
    parts += ["## Machine", machine_table(results["machine"])]
    notes = results.get("notes") or []
    if notes:
        parts += ["## Notes", "\n".join(f"- {note}" for note in notes)]
    if results.get("recommendation"):
        parts += ["## Recommendation", _recommendation_caption(), recommendation_table(results["recommendation"])]
    path.write_text("\n\n".join(parts) + "\n")
    return path


def _summary_caption(results: dict, config: BenchConfig) -> str:
    largest = results["summary"][0].get("speed_vocab") if results["summary"] else None
    datasets = (
        [results["summary"][0].get(f"ppl_{slot}_dataset") for slot in ("small", "large")] if results["summary"] else []
    )
    speed_part = (
        f"Speed-ups over `{reference_output()}` at V = {largest:,}, H = {config.hidden}, N = {config.batch} "
        "(train: one training step; test: the exact normalised distribution, `log_softmax`, on the test-time "
        "rows N' of the raw table); "
        if largest
        else "No speed run; "
    )
    quality_part = (
        "perplexities are exact test perplexities of the same NNLM trained with each layer on "
        + " and ".join(f"`{d}`" for d in datasets if d)
        + (" (ratio to the synthetic language's floor in brackets); " if config.corpus is None else "; ")
        if any(datasets)
        else "no quality run; "
    )
    return speed_part + quality_part + f"parameters of the output layer as a percentage of `{reference_output()}`'s."


def _searching_layers() -> list[str]:
    """Registered layers that declare ``topk_by_search``."""
    return [name for name in OUTPUTS.names() if OUTPUTS.get(name).topk_by_search]


def _speed_caption(config: BenchConfig) -> str:
    reference = reference_output()
    return (
        f"Each speed-up is the median of the ratios {reference} time / layer time over {config.repeats} repetitions, "
        "the two timed back to back in each repetition (order alternating), after a warm-up; IQR in brackets. "
        f"An operation whose call lasts under {WARMUP_BELOW_SECONDS:g} s is called once, untimed, before each of its "
        "timings, so that it is not charged for the caches and pages the other layer's call left. "
        f"Fewer repetitions are made where {config.repeats} pairs would last over {config.op_budget_seconds:g} s "
        "(the JSON/CSV give each count); `(1 pair)` marks a speed-up from a single pair, which has no spread, "
        "and `(1 call)` an operation whose single call outlasts that budget: its warm-up call is set against "
        f"one call of {reference}'s. "
        "Training steps use N rows; `log_softmax` and top-10 use the test-time rows N' (N unless N x V floats "
        "would exceed the cap in the notes). "
        f"Top-10 fitted: layers whose exact top-k is a pruned search ({', '.join(_searching_layers())}) again, "
        f"on a copy first fitted to those N' rows ({FIT_STEPS} Adagrad steps on their targets; p = the mean "
        "target probability reached), "
        f"against {reference}'s top-10, whose cost does not depend on the weights: an untrained layer is flat, the "
        "search's worst case. "
        f"`{reference}` paired with itself shows the noise of the measurement. Peak step MiB: growth of the resident "
        "set (VmHWM after − VmRSS before) over the first training step in a separate process whose allocator "
        "returns freed blocks (CPU), or `torch.cuda.max_memory_allocated` growth (GPU); parameters excluded. "
        "Required GFLOP: the arithmetic the method must do (its declared cost model, see "
        "`bigvocab.outputs.cost`); `(counted)` marks layers without one, whose executed matmul flops are used. "
        "% of matmul rate: required flops / "
        "step time / the best dense matmul rate measured below. "
        "% of roofline: the step's limit on this machine over its time, the limit being the larger of its "
        "compute time (required flops / matmul rate) and its memory time (the layer's declared bytes, "
        "each parameter row it touches counted once per pass however many pairs score it: streamed bytes / copy "
        "bandwidth + declared bytes gathered as scattered rows / the slower of gather and scatter bandwidth "
        "on a table of the row's V, measured below); 100% is the hardware limit."
    )


def _quality_caption(config: BenchConfig) -> str:
    q = config.quality
    data = (
        f"`{config.corpus}`, all of its training split"
        if config.corpus is not None
        else f"synthetic {q.train_tokens:,} tokens with a within-class Zipf exponent of {q.zipf:g}"
    )
    brown = "all" if q.brown_train_tokens is None else f"{q.brown_train_tokens:,}"
    rows = (
        "every row" if q.all_rows or config.outputs is not None else "the first declared form of each registered layer"
    )
    repeats = (
        ""
        if not q.seed_repeats
        else f"; `{reference_output()}` also with seed{'s' if q.seed_repeats > 1 else ''} "
        + ", ".join(str(config.seed + r) for r in range(1, q.seed_repeats + 1))
        + ", for the seed-to-seed spread"
    )
    return (
        f"NNLM {q.model_kwargs}, {rows}{repeats}, trained for {q.budget_seconds:g} s of wall time per layer "
        f"(evaluation excluded; as many passes over the training split as fit: {data}"
        + ("" if config.brown is None else f", Brown {brown}")
        + "), "
        f"batch {q.batch_size}, {q.threads or 'all'} intra-op thread(s), "
        f"optimiser {q.optimizer} (lr {q.lr}), seed {config.seed}, "
        + (
            "each sampling layer with its own default k"
            if config.num_samples is None
            else f"k = {config.num_samples} for the layers that sample"
        )
        + ". Test perplexity (exact for every layer: normalised over the whole vocabulary) is measured at "
        + ", ".join(f"{fraction * q.budget_seconds:g}" for fraction in q.checkpoints)
        + " s of training"
        + ("" if q.test_tokens is None else f" on the first {q.test_tokens:,} test tokens")
        + "; the ratio to the synthetic language's floor in brackets. Validation perplexity is measured beside it"
        + ("" if q.test_tokens is None else f" (first {q.test_tokens:,} validation tokens)")
        + "; * marks each layer's checkpoint with the lowest (none in rows measured before it was recorded)."
    )


def _recommendation_caption() -> str:
    return (
        "For each corpus and time budget measured: the layer whose kept model had the lowest exact test perplexity "
        f"after that much training, and the layer whose kept model came within {100 * TOLERANCE:g}% of that "
        "perplexity first (the training time at which it did). The model kept is, where every layer of the corpus "
        f"has validation perplexities, the {ON_VALIDATION} among those due by the budget (what early stopping "
        "keeps: a layer that overfits is judged by its best model), otherwise the model at the budget. No layer is "
        "named where the budget cannot rank them: where the validation perplexity of most layers rose since the "
        "previous checkpoint, or where other layers came within the seed-to-seed spread of the best (the spread "
        f"of `{reference_output()}`'s runs with different seeds, where the run has them). Measured on "
        "this run's machine: a loaded or different machine moves the time axis, and with it the answer."
    )
