"""Speed: every row's training step, ``log_softmax`` and ``topk`` against ``full``, paired.

For each V, one workload (hidden states, unigram-distributed targets) is shared by all rows. The
reference ``full`` is warmed up once; each row is built, warmed up (its first training step runs
under a flop counter), and then timed in ``repeats`` pairs with ``full`` (see
:mod:`bigvocab.bench.harness.timing`). ``full`` itself is paired with itself: its spread is the noise of
the measurement. A row that fails to build or to run an operation keeps its place and its error.
An evaluation operation is first probed on one row: one whose probe predicts a call longer than
:data:`MAX_CALL_SECONDS` (``char``'s whole-trie ``log_softmax`` at V = 1M) is skipped and the row
says so, rather than stall the run or report a meaningless 0.00x.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.operations import (
    OPERATIONS,
    REFERENCE_OPERATION,
    TOPK,
    FittedTopk,
    Workload,
    evaluation_rows,
    layer_operations,
    make_workload,
)
from bigvocab.bench.harness.rows import OperationTiming, SpeedRow
from bigvocab.bench.harness.selection import Candidate
from bigvocab.bench.harness.side_data import build_layer, synthetic_side_data
from bigvocab.bench.harness.timing import inner_loop_size, paired_speedup, paired_timings, seconds_per_call, synchronize
from bigvocab.bench.suites.memory import MIB
from bigvocab.bench.suites.roofline import counted_flops, required_train_cost
from bigvocab.outputs.base import OutputLayer

#: An evaluation operation whose one-row probe predicts a longer call (N' rows) is not timed.
MAX_CALL_SECONDS = 120.0

#: An operation whose call lasts less is called once, untimed, before each of its paired
#: timings. Right after the other side's call it runs on caches, pages and an allocator that the
#: other layer left: at V = 1M, a sampling layer's first step after a ``full`` step took up to 3x
#: its steady time in one run, about 8x in another (``docs/design/bench-measurement.md``), a cost a training
#: loop, which calls the same layer step after step, never pays. A longer call is not repeated:
#: that cost is small beside it, and a second ``full`` step at V = 1M would add seconds to every
#: pair.
WARMUP_BELOW_SECONDS = 1.0


@dataclass
class Prepared:
    """A built layer with its operation closures, the seconds of one call of each (from the
    warm-up), inner-loop sizes and counted flops."""

    layer: OutputLayer
    operations: dict[str, Callable[[], object]]
    seconds: dict[str, float]
    inner: dict[str, int]
    counted_train_flops: float | None


def prepare(
    layer: OutputLayer,
    workload: Workload,
    device: torch.device,
    min_time: float,
    max_call_seconds: float = MAX_CALL_SECONDS,
) -> tuple[Prepared, list[str], list[str]]:
    """Warm each operation up (the first training step runs under the flop counter) and size its
    inner loop: from the warm-up call when that already lasts ``min_time`` (slow operations are
    not run again for nothing), else from a second call free of first-call costs. Failures, and
    operations skipped as too slow (:func:`probe_seconds_per_row`), are returned as two lists of
    messages."""
    operations = layer_operations(layer, workload)
    call_seconds: dict[str, float] = {}
    inner: dict[str, int] = {}
    errors: list[str] = []
    skipped: list[str] = []
    counted = None
    for name, operation in operations.items():
        try:
            if isinstance(operation, FittedTopk):
                operation.fit()  # untimed: the fitting stands for training done elsewhere
            if name != "train":
                per_row = probe_seconds_per_row(layer, name, operation, workload, max_call_seconds)
                if per_row * workload.eval_hidden.shape[0] > max_call_seconds:
                    skipped.append(f"{name} skipped (too slow: {per_row:.3g} s/row)")
                    continue
            synchronize(device)
            start = time.perf_counter()
            if name == "train":
                counted = _count_or_none(operation)
            else:
                operation()
            synchronize(device)
            seconds = time.perf_counter() - start
            if seconds < min_time or (layer.eval_cache and name != "train"):
                # A first call that filled an evaluation cache says nothing of the next ones.
                seconds = seconds_per_call(operation, 1, device)
            call_seconds[name] = seconds
            inner[name] = inner_loop_size(seconds, min_time)
        except Exception as error:  # reported on the row
            errors.append(f"{name}: {type(error).__name__}: {error}")
    return Prepared(layer, operations, call_seconds, inner, counted), errors, skipped


def probe_seconds_per_row(
    layer: OutputLayer, name: str, operation: Callable[[], object], workload: Workload, max_call_seconds: float
) -> float:
    """Seconds per row of evaluation operation ``name`` (``log_softmax``, ``topk`` or
    ``topk_fitted``), from a call on the first test row; a call that predicts a skip is repeated
    once, so a first-call cost alone does not skip an operation."""
    target = operation.fitted_layer() if isinstance(operation, FittedTopk) else layer
    row = workload.eval_hidden[:1]
    target.eval()
    seconds = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        with torch.no_grad():
            target.log_softmax(row) if name == "log_softmax" else target.topk(row, TOPK)
        synchronize(row.device)
        seconds = min(seconds, time.perf_counter() - start)
        if seconds * workload.eval_hidden.shape[0] <= max_call_seconds:
            break
    return seconds


def _count_or_none(step: Callable[[], object]) -> float | None:
    try:
        return counted_flops(step)
    except Exception:  # the counter could not follow an op; the step itself is retried bare
        step()
        return None


def parameter_count(layer: OutputLayer) -> int:
    return sum(p.numel() for p in layer.parameters())


def check_dense_memory(candidate: Candidate, num_rows: int, num_classes: int, hidden: int) -> None:
    """Refuse a layer that declares ``dense_logits`` when its step would not fit in the memory
    available now, rather than let the system kill the whole run: logits, softmax and their
    gradient are 3·N·V floats, the weight and its gradient 2·V·H."""
    if not candidate.layer_class.dense_logits:
        return
    needed = 4.0 * (3 * num_rows * num_classes + 2 * num_classes * hidden)
    available = available_memory_bytes()
    if available is not None and needed > 0.8 * available:
        raise MemoryError(f"a step needs about {needed / 2**30:.1f} GiB, only {available / 2**30:.1f} GiB is available")


def available_memory_bytes() -> float | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def measure_vocab(
    candidates: list[Candidate],
    vocab_size: int,
    config: BenchConfig,
    *,
    memory: dict[str, dict],
    on_row: Callable[[SpeedRow], None],
    done: dict[str, SpeedRow] | None = None,
) -> list[SpeedRow]:
    """One row per candidate at vocabulary size ``vocab_size``; candidates[0] must be ``full``.
    ``memory`` holds the peak-memory results by label (see :mod:`bigvocab.bench.suites.memory`); a
    candidate whose label is in ``done`` (rows of an earlier piece of the run) is not measured
    again, its row is passed on as it was."""
    done = done or {}
    device = torch.device(config.device)
    side = synthetic_side_data(vocab_size, seed=config.seed)
    eval_rows = evaluation_rows(config.batch, vocab_size, config.max_eval_elements)
    workload = make_workload(side.counts, config.hidden, config.batch, eval_rows, seed=config.seed, device=device)
    torch.manual_seed(config.seed)
    reference_layer, _ = build_layer(candidates[0], config.hidden, vocab_size, side, num_samples=config.num_samples)
    reference, reference_errors, _ = prepare(reference_layer.to(device), workload, device, config.min_time)
    if reference_errors:
        raise RuntimeError(
            f"the reference layer {candidates[0].label!r} failed at V={vocab_size}: {'; '.join(reference_errors)}"
        )
    full_params = parameter_count(reference_layer)
    rows = []
    for candidate in candidates:
        if candidate.label in done:
            on_row(done[candidate.label])
            rows.append(done[candidate.label])
            continue
        row = SpeedRow(
            approach=candidate.label,
            method=candidate.method,
            kind=candidate.kind,
            vocab_size=vocab_size,
            hidden=config.hidden,
            batch=config.batch,
            eval_rows=eval_rows,
        )
        measured = memory.get(candidate.label, {})
        row.peak_step_mib, row.memory_error = measured.get("peak_step_mib"), measured.get("memory_error")
        errors: list[str] = []
        skipped: list[str] = []
        try:
            check_dense_memory(candidate, config.batch, vocab_size, config.hidden)
            torch.manual_seed(config.seed)
            start = time.perf_counter()
            layer, shown = build_layer(candidate, config.hidden, vocab_size, side, num_samples=config.num_samples)
            row.build_seconds = time.perf_counter() - start
            row.options = shown
            layer = layer.to(device)
            prepared, errors, skipped = prepare(layer, workload, device, config.min_time)
            fitted = prepared.operations.get("topk_fitted")
            if isinstance(fitted, FittedTopk):
                row.topk_fitted_target_p = fitted.target_probability
            row.timings = time_operations(reference, prepared, config, device)
            _add_size_and_flops(row, layer, workload, prepared, full_params)
            del layer, prepared
        except Exception as error:  # a failing layer is a row that says why, never a silent gap
            errors.append(f"{type(error).__name__}: {error}")
        row.status = "error" if errors else "ok"
        row.error = "; ".join(errors + skipped)
        on_row(row)
        rows.append(row)
    return rows


def timing_seconds(call_seconds: float, min_time: float) -> float:
    """Seconds one paired timing of a call lasting ``call_seconds`` takes: its inner loop (at
    least ``min_time``) and, below :data:`WARMUP_BELOW_SECONDS`, the untimed call before it."""
    warmup = call_seconds if call_seconds < WARMUP_BELOW_SECONDS else 0.0
    return max(call_seconds, min_time) + warmup


def repeats_within(budget_seconds: float, pair_seconds: float, most: int) -> int:
    """Repetitions of a pair lasting ``pair_seconds`` that fit in ``budget_seconds``, between 1
    and ``most``: a very slow operation is timed fewer times rather than stall the run."""
    if pair_seconds <= 0:
        return most
    return max(1, min(most, int(budget_seconds // pair_seconds)))


def time_operations(
    reference: Prepared, prepared: Prepared, config: BenchConfig, device: torch.device
) -> dict[str, OperationTiming]:
    """Each operation's timing against full's (median of full/layer per repetition, quartiles,
    extremes, seconds) and the repetitions actually made: fewer than asked when the pairs would
    overrun the budget, 0 when one call of the layer alone does (then the warm-up call is compared
    with one of full's)."""
    out: dict[str, OperationTiming] = {}
    for name in OPERATIONS:
        reference_name = REFERENCE_OPERATION.get(name, name)
        if name not in prepared.inner or reference_name not in reference.inner:
            continue
        if name != "train" and prepared.layer.eval_cache:
            prepared.operations[name]()  # refills the cache the timed training steps made stale
        if prepared.seconds[name] > config.op_budget_seconds:
            # Slower than the whole budget: its warm-up call is its one timing, set against a
            # fresh call of full's (repeats = 0 marks this unpaired estimate).
            repeats = 0
            layer_times = [prepared.seconds[name]]
            full_times = [
                seconds_per_call(reference.operations[reference_name], reference.inner[reference_name], device)
            ]
        else:
            full_seconds, layer_seconds = reference.seconds[reference_name], prepared.seconds[name]
            pair = timing_seconds(full_seconds, config.min_time) + timing_seconds(layer_seconds, config.min_time)
            repeats = repeats_within(config.op_budget_seconds, pair, config.repeats)
            full_times, layer_times = paired_timings(
                reference.operations[reference_name],
                prepared.operations[name],
                reference_inner=reference.inner[reference_name],
                candidate_inner=prepared.inner[name],
                repeats=repeats,
                device=device,
                reference_warmup=full_seconds < WARMUP_BELOW_SECONDS,
                candidate_warmup=layer_seconds < WARMUP_BELOW_SECONDS,
            )
        out[name] = OperationTiming.from_summary(paired_speedup(full_times, layer_times), repeats)
    return out


def _add_size_and_flops(
    row: SpeedRow, layer: OutputLayer, workload: Workload, prepared: Prepared, full_params: int
) -> None:
    params = parameter_count(layer)
    cost, source = required_train_cost(layer, workload.target)
    required = None if cost is None else cost.flops
    if required is None and prepared.counted_train_flops is not None:
        required, source = prepared.counted_train_flops, f"counted ({source})"
    row.params = params
    row.params_pct = 100.0 * params / full_params
    row.param_mib = sum(p.numel() * p.element_size() for p in layer.parameters()) / MIB
    row.required_flops = required
    row.required_bytes = None if cost is None else cost.bytes
    row.required_gathered_bytes = None if cost is None else cost.gathered
    row.flops_source = source
    row.counted_flops = prepared.counted_train_flops
    step_seconds = row.train_seconds
    if required is not None and step_seconds:
        row.achieved_gflops = required / step_seconds / 1e9
