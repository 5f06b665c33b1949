"""``run_bench``: matmul rate, speed, memory, quality, then the files -- printing as it goes."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TextIO

import torch
from tqdm import tqdm

from bigvocab.bench.harness import formatting
from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.journal import JOURNAL_NAME, BenchJournal
from bigvocab.bench.harness.machine import describe_machine
from bigvocab.bench.harness.plots import PLOT_FILES, write_plots
from bigvocab.bench.harness.rows import SpeedRow
from bigvocab.bench.harness.selection import select_candidates
from bigvocab.bench.report import summarise, write_csv, write_json, write_markdown
from bigvocab.bench.suites.memory import measure_memory, memory_spec
from bigvocab.bench.suites.quality import quality_candidates, quality_tasks, run_quality_task
from bigvocab.bench.suites.recommend import recommend
from bigvocab.bench.suites.roofline import (
    add_roofline_fractions,
    matmul_shapes,
    measure_bandwidth,
    measure_matmul_rate,
    probe_table_mib,
    probe_table_rows,
)
from bigvocab.bench.suites.speed import measure_vocab
from bigvocab.data.corpora import check_corpus_spec
from bigvocab.errors import ConfigError
from bigvocab.train.rundir import CLI_SPELLING, RunLock
from bigvocab.validation import check_nonnegative_int, check_positive_float, check_positive_int

#: What a finished run leaves in its ``out`` directory, besides its plots.
REPORT_FILES = ("report.md", "results.json", "results.csv")


def check_config(config: BenchConfig) -> torch.device:
    """Validate sizes, the device and the corpora before anything long starts."""
    for name in ("hidden", "batch", "repeats", "max_eval_elements"):
        check_positive_int(name, getattr(config, name))
    if config.num_samples is not None:
        check_positive_int("num_samples", config.num_samples)
    check_nonnegative_int("seed", config.seed)
    check_positive_float("op_budget_seconds", config.op_budget_seconds)
    if not config.vocab_sizes and not config.skip_speed:
        raise ConfigError("no vocabulary size to measure (--vocab-sizes)")
    if any(v < 2 for v in config.vocab_sizes):
        raise ConfigError(f"every vocabulary size must be at least 2, got {list(config.vocab_sizes)}")
    try:
        device = torch.device(config.device)
    except RuntimeError as error:
        raise ConfigError(f"unknown device {config.device!r}: {error}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {config.device!r} was asked for but CUDA is not available here")
    if device.type not in ("cpu", "cuda"):
        raise ConfigError(f"the benchmark runs on 'cpu' or 'cuda' devices, got {config.device!r}")
    if config.brown is not None:
        check_corpus_spec(f"brown-bengio:{config.brown}")
    if config.corpus is not None:
        check_corpus_spec(config.corpus)
    return device


def check_out(out: Path | None, *, resume: bool, overwrite: bool) -> None:
    """Refuse to write over the files of a finished run in ``out`` unless ``overwrite``, as
    ``bigvocab train`` refuses a finished run directory (an unfinished one is the journal's)."""
    if out is None or resume or overwrite or (Path(out) / JOURNAL_NAME).exists():
        return
    present = [name for name in REPORT_FILES if (Path(out) / name).exists()]
    if present:
        raise ConfigError(
            f"{str(out)!r} holds a finished benchmark run ({present[0]}); pass --overwrite to replace it, "
            "or choose another --out"
        )


class _Printer:
    """Lines above a tqdm bar; the bar is hidden when progress is off or output is not a terminal."""

    def __init__(self, total: int, enabled: bool, stream: TextIO | None) -> None:
        self.stream = stream
        self.bar = tqdm(total=total, disable=None if enabled else True, unit="row", leave=False, dynamic_ncols=True)

    def line(self, text: str) -> None:
        if self.stream is not None:
            tqdm.write(text, file=self.stream)

    def row(self, text: str) -> None:
        self.line(text)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def run_bench(
    config: BenchConfig, *, stream: TextIO | None = None, resume: bool = False, overwrite: bool = False
) -> dict:
    """Run the benchmark ``config`` describes and write its files to ``config.out`` (if set).

    Every finished row goes to the run's journal (:mod:`bigvocab.bench.harness.journal`) in ``config.out``
    as it lands; ``resume`` continues the unfinished run there, measuring only the rows it lacks,
    and ``overwrite`` starts afresh over one (without either, an unfinished run there is an error).

    Returns the results: ``config``, ``machine``, ``approaches`` (row labels in order),
    ``matmul``, ``bandwidth``, ``speed`` and ``quality`` rows, ``summary`` (the comparison table),
    ``recommendation`` (:func:`~bigvocab.bench.suites.recommend.recommend`), ``word2vec`` (with
    ``config.word2vec``, :func:`~bigvocab.bench.suites.word2vec.run_word2vec_bench`), ``notes``,
    ``phase_seconds`` and ``wall_seconds`` (over all pieces of a resumed run), ``pieces`` (when
    and where each piece ran), ``files``. Lines of the terminal table go to ``stream`` (None: silent).

    Raises:
        ConfigError: bad settings, a corpus that is missing or of the wrong kind, or a finished run
            in ``config.out`` (without ``overwrite``): before anything is measured.
        RunLockedError: another run holds ``config.out``.
    """
    device = check_config(config)
    check_out(config.out, resume=resume, overwrite=overwrite)
    candidates = select_candidates(config.outputs)
    tasks = [] if config.skip_quality else quality_tasks(config)
    with RunLock(config.out, CLI_SPELLING) if config.out is not None else contextlib.nullcontext():
        journal = BenchJournal.start(config, describe_machine(device), resume=resume, overwrite=overwrite)
        return _run(config, device, candidates, tasks, journal, stream)


def _run(config: BenchConfig, device: torch.device, candidates, tasks, journal: BenchJournal, stream) -> dict:
    machine = journal.pieces[-1]["machine"]
    results: dict = {
        "config": config.to_dict(),
        "machine": machine,
        "approaches": [c.label for c in candidates],
        "speed": [],
        "quality": [],
        "notes": [],
    }
    trained = quality_candidates(candidates, config)
    total = (0 if config.skip_speed else len(config.vocab_sizes) * len(candidates)) + len(tasks) * len(trained)
    printer = _Printer(total, config.progress, stream)
    if len(journal.pieces) > 1:
        printer.line(
            f"resuming the run in {config.out}: {len(journal.state['speed'])} speed and "
            f"{len(journal.state['quality'])} quality rows were measured before"
        )
    try:
        if not config.skip_speed:
            _speed_phase(config, device, candidates, results, printer, journal)
        for task in tasks:
            printer.line(f"\nquality: NNLM on {task.name}\n{formatting.QUALITY_HEADER}")
            results["quality"] += _quality_rows(task, trained, config, printer, journal)
        if config.word2vec:
            results["word2vec"] = journal.word2vec or _word2vec_phase(config, printer, journal)
    finally:
        printer.close()
    results["phase_seconds"] = journal.phase_seconds
    results["pieces"] = journal.pieces
    results["summary"] = summarise(results)
    results["recommendation"] = recommend(results["quality"])
    results["wall_seconds"] = journal.wall_seconds
    # Only now is the last piece's length known: notes taken at its start said 0 min.
    results["notes"] = journal.notes() + results["notes"]
    if config.out is not None:
        results["files"] = [str(p) for p in write_outputs(results, config, Path(config.out))]
    journal.finish()
    return results


def _quality_rows(task, candidates, config: BenchConfig, printer: _Printer, journal: BenchJournal) -> list:
    def on_row(row) -> None:
        journal.add_quality_row(row)
        printer.row(formatting.quality_line(row))

    return run_quality_task(task, candidates, config, on_row, done=journal.quality_rows(task.name))


def _speed_phase(
    config: BenchConfig, device: torch.device, candidates, results: dict, printer: _Printer, journal: BenchJournal
) -> None:
    shapes = matmul_shapes(config.hidden, config.batch)
    stored = journal.limits()
    finished = all(
        candidate.label in journal.speed_rows(vocab_size)
        for vocab_size in config.vocab_sizes
        for candidate in candidates
    )
    if finished and stored is not None:
        # A piece that measures no speed row must not lend its machine's limits to rows measured
        # on another: a resumed piece may run on a different kind of machine.
        matmul, bandwidth = stored
        printer.line("every speed row was measured in an earlier piece: the limits are that piece's")
    else:
        matmul = measure_matmul_rate(shapes, device, seed=config.seed)
        printer.line(f"dense matmul rate: {matmul['best_gflops']:.1f} GFLOP/s (best of {len(shapes)} shapes)")
        matmul, bandwidth = journal.best_limits(matmul, {})
    printer.line(
        f"\nspeed: H={config.hidden}, N={config.batch}, {config.repeats} paired repetitions\n{formatting.SPEED_HEADER}"
    )

    def on_row(row: SpeedRow) -> None:
        journal.add_speed_row(row)
        printer.row(formatting.speed_line(row))

    def probe(vocab_size: int) -> dict:
        """Bandwidths on a table of this V's weight size (the journal keeps the best of each)."""
        rows = probe_table_rows(vocab_size, config.hidden)
        rates = measure_bandwidth(device, table_rows=rows, width=config.hidden, seed=config.seed)
        printer.line(_bandwidth_line(vocab_size, config.hidden, rates))
        return {str(vocab_size): rates}

    for vocab_size in config.vocab_sizes:
        done = journal.speed_rows(vocab_size)
        if all(candidate.label in done for candidate in candidates):
            rows = [done[candidate.label] for candidate in candidates]
            for row in rows:
                printer.row(formatting.speed_line(row))
            results["speed"] += rows
            continue
        matmul, bandwidth = journal.best_limits(matmul, probe(vocab_size))
        memory = journal.memory(vocab_size)
        if memory is None:
            memory = measure_memory(memory_spec(config, candidates, vocab_size)) if config.measure_memory else {}
            journal.set_memory(vocab_size, memory)
        rows = measure_vocab(candidates, vocab_size, config, memory=memory, on_row=on_row, done=done)
        results["speed"] += rows
        eval_rows = rows[0].eval_rows
        if eval_rows < config.batch:
            results["notes"].append(
                f"V={vocab_size:,}: log_softmax and topk timed on {eval_rows} rows instead of {config.batch} "
                f"(N' x V floats capped at {config.max_eval_elements:,})"
            )
        # The machine's rates drift with its load: measured again after each V, the best are the limits.
        again = measure_matmul_rate(shapes, device, seed=config.seed)
        if again["best_gflops"] > matmul["best_gflops"]:
            matmul = again
        matmul, bandwidth = journal.best_limits(matmul, probe(vocab_size))
    results["matmul"], results["bandwidth"] = matmul, bandwidth
    add_roofline_fractions(results["speed"], matmul["best_gflops"], bandwidth)
    printer.line(f"best dense matmul rate of the run: {matmul['best_gflops']:.1f} GFLOP/s")
    for key, rates in bandwidth.items():
        printer.line("best " + _bandwidth_line(int(key), config.hidden, rates))


def _word2vec_phase(config: BenchConfig, printer: _Printer, journal: BenchJournal) -> dict:
    """``bench --word2vec``'s rows (its own files, word2vec.json and word2vec.md, under ``out``)."""
    from bigvocab.bench.suites.word2vec import run_word2vec_bench  # numba and gensim load only when asked for

    printer.line("\nword2vec: the engine against gensim")
    rows = run_word2vec_bench(config.brown, config.out, config.repeats, log=printer.line)
    journal.set_word2vec(rows)
    return rows


def _bandwidth_line(vocab_size: int, width: int, rates: dict) -> str:
    return (
        f"memory bandwidth for V={vocab_size:,} (a {probe_table_mib(vocab_size, width):,.0f} MiB table): stream "
        f"{rates['stream_gbps']:.1f} GB/s, gather {rates['gather_gbps']:.1f} GB/s, scatter {rates['scatter_gbps']:.1f} GB/s"
    )


def write_outputs(results: dict, config: BenchConfig, out_dir: Path) -> list[Path]:
    """results.json, results.csv, the plots (if matplotlib is there) and report.md; a plot of a
    run replaced with ``--overwrite`` that this run does not draw is removed, not left beside it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots: list[Path] = []
    if config.plots:
        plots, notes = write_plots(results, out_dir)
        results["notes"] += notes
    for name in set(PLOT_FILES) - {plot.name for plot in plots}:
        (out_dir / name).unlink(missing_ok=True)
    markdown = write_markdown(results, config, out_dir / "report.md", plots=plots)
    written = [write_json(results, out_dir / "results.json"), write_csv(results, out_dir / "results.csv"), markdown]
    return written + plots
