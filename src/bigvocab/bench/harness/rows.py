"""The bench's rows as dataclasses rather than dicts of generated keys: :class:`SpeedRow` (one
layer at one V) and :class:`QualityRow` (one layer trained on one corpus).

``results.json`` holds :func:`dataclasses.asdict` of each row (a timed operation is a nested
object under ``timings``, a quality curve a list of :class:`CurvePoint` objects);
``results.csv`` holds :meth:`SpeedRow.csv_record` / :meth:`QualityRow.csv_record`, the same
figures with each timing flattened into ``{operation}_{figure}`` columns; :func:`json_safe` makes
rows (and whatever holds them) fit for strict JSON.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import cast

from bigvocab.bench.harness.timing import RatioSummary


@dataclass
class OperationTiming:
    """One operation of a layer timed against ``full``'s (see :mod:`bigvocab.bench.suites.speed`).

    ``speedup`` is the median of the per-repetition ratios full time / layer time, ``q1``/``q3``
    its quartiles and ``min``/``max`` its extremes; ``seconds`` and ``full_seconds`` the median
    seconds per call of the layer and of ``full``. ``repeats``: the pairs timed, 0 when one call
    of the layer outlasts the budget and its warm-up call was set against one call of full's.
    """

    speedup: float
    q1: float
    q3: float
    min: float
    max: float
    seconds: float
    full_seconds: float
    repeats: int

    @classmethod
    def from_summary(cls, summary: RatioSummary, repeats: int) -> OperationTiming:
        return cls(
            speedup=summary.median,
            q1=summary.q1,
            q3=summary.q3,
            min=summary.min,
            max=summary.max,
            seconds=summary.candidate_seconds,
            full_seconds=summary.reference_seconds,
            repeats=repeats,
        )


@dataclass
class SpeedRow:
    """One candidate at vocabulary size ``vocab_size``: its timings, size, cost and memory.

    A figure that was not measured (the layer failed, declares no cost, memory was not measured)
    is None; ``status`` is ``"ok"`` or ``"error"`` with the reasons in ``error``.
    """

    approach: str
    method: str
    kind: str
    vocab_size: int
    hidden: int
    batch: int
    #: rows N' the evaluation operations (log_softmax, topk) run on.
    eval_rows: int
    phase: str = "speed"
    #: peak memory of the first training step (separate process), or why it is missing.
    peak_step_mib: float | None = None
    memory_error: str | None = None
    build_seconds: float | None = None
    #: options the layer was built with, as shown.
    options: dict = field(default_factory=dict)
    #: mean target probability the fitted top-k's fitting reached.
    topk_fitted_target_p: float | None = None
    #: by operation name (:data:`bigvocab.bench.harness.operations.OPERATIONS`), those that ran.
    timings: dict[str, OperationTiming] = field(default_factory=dict)
    params: int | None = None
    params_pct: float | None = None
    param_mib: float | None = None
    required_flops: float | None = None
    required_bytes: float | None = None
    required_gathered_bytes: float | None = None
    flops_source: str | None = None
    counted_flops: float | None = None
    achieved_gflops: float | None = None
    #: filled at the end of the run (:func:`bigvocab.bench.suites.roofline.add_roofline_fractions`).
    matmul_fraction: float | None = None
    roofline_seconds: float | None = None
    roofline_fraction: float | None = None
    status: str = "ok"
    error: str = ""

    @classmethod
    def from_dict(cls, record: dict) -> SpeedRow:
        """The row :func:`dataclasses.asdict` gave (as ``results.json`` and the journal hold it)."""
        timings = {name: OperationTiming(**timing) for name, timing in record.get("timings", {}).items()}
        return cls(**{**record, "timings": timings})

    def speedup(self, operation: str) -> float | None:
        timing = self.timings.get(operation)
        return None if timing is None else timing.speedup

    @property
    def train_seconds(self) -> float | None:
        timing = self.timings.get("train")
        return None if timing is None else timing.seconds

    def csv_record(self) -> dict:
        """The row as flat columns: each timing's figures become ``{operation}_{figure}``."""
        record = asdict(self)
        timings = record.pop("timings")
        for operation, timing in timings.items():
            record.update({f"{operation}_{name}": value for name, value in timing.items()})
        return record


@dataclass
class CurvePoint:
    """Exact test perplexity once ``budget_seconds`` of training were due (see
    :func:`bigvocab.bench.suites.quality.train_on_budget`): ``train_seconds`` actually trained, the
    ``tokens`` and optimiser ``steps`` done by then, the perplexity as a ratio to the
    language's floor (None when the corpus has no known floor), and the exact perplexity on the
    validation split (None in runs made before it was measured), which picks the checkpoint early
    stopping would keep."""

    budget_seconds: float
    train_seconds: float
    tokens: int
    steps: int
    test_ppl: float
    ppl_ratio: float | None = None
    valid_ppl: float | None = None


@dataclass
class QualityRow:
    """One candidate's NNLM trained on corpus ``dataset`` (see :mod:`bigvocab.bench.suites.quality`).

    ``test_ppl``, ``ppl_ratio`` and ``train_seconds`` are the last point of ``curve``; all
    figures are None when the layer failed (``status`` ``"error"``, the reason in ``error``).
    """

    dataset: str
    approach: str
    method: str
    kind: str
    vocab_size: int
    train_tokens: int
    test_tokens: int
    #: the synthetic language's lowest possible perplexity exp(H); None for a real corpus.
    floor_ppl: float | None
    threads: int
    #: 0, or r: the reference layer trained again with the run's seed + r (the seed-to-seed spread).
    repeat: int = 0
    phase: str = "quality"
    options: dict = field(default_factory=dict)
    params: int | None = None
    tokens_seen: int | None = None
    epochs_seen: float | None = None
    test_ppl: float | None = None
    ppl_ratio: float | None = None
    train_seconds: float | None = None
    eval_seconds: float | None = None
    curve: list[CurvePoint] = field(default_factory=list)
    status: str = "ok"
    error: str = ""

    def best_on_validation(self, budget: float | None = None) -> CurvePoint | None:
        """The checkpoint early stopping keeps: the lowest validation perplexity among the points
        due by ``budget`` (all when None); None when one of them has no validation figure."""
        due = [point for point in self.curve if budget is None or point.budget_seconds <= budget]
        if not due or any(point.valid_ppl is None for point in due):
            return None
        return min(due, key=lambda point: cast(float, point.valid_ppl))  # none is None (checked above)

    def kept_point(self, budget: float, on_validation: bool) -> CurvePoint | None:
        """The checkpoint a user with ``budget`` seconds keeps: the lowest validation perplexity
        among those due by ``budget`` (``on_validation``), else the one at ``budget``; None when
        the curve has no point at ``budget``."""
        at_budget = next((point for point in self.curve if point.budget_seconds == budget), None)
        if at_budget is None or not on_validation:
            return at_budget
        return self.best_on_validation(budget)

    @classmethod
    def from_dict(cls, record: dict) -> QualityRow:
        """The row :func:`dataclasses.asdict` gave (as ``results.json`` and the journal hold it)."""
        return cls(**{**record, "curve": [CurvePoint(**point) for point in record.get("curve", [])]})

    def csv_record(self) -> dict:
        """The row as columns; the curve stays one (JSON) cell."""
        return asdict(self)


def json_safe(value):
    """JSON has no NaN or Infinity: they become null. Dataclass rows become their fields."""
    if is_dataclass(value) and not isinstance(value, type):
        return json_safe(asdict(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value
