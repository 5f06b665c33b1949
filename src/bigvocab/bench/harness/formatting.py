"""How the bench prints: number formats shared by the terminal table and the markdown report,
and the terminal table itself, one line per row as soon as it is measured."""

from __future__ import annotations

from bigvocab.bench.harness.rows import OperationTiming, QualityRow, SpeedRow

MISSING = "–"


def speedup(value: float | None) -> str:
    """1.234 -> "1.23x", 123.4 -> "123x"; None -> "–"."""
    if value is None:
        return MISSING
    digits = 2 if value < 10 else (1 if value < 100 else 0)
    return f"{value:.{digits}f}x"


def speedup_spread(timing: OperationTiming | None) -> str:
    """``"12.3x [11.9–12.8]"``: the median with the interquartile range of the paired ratios;
    ``"0.01x (1 call)"`` for an operation too slow to repeat, ``"1582x (1 pair)"`` for one whose
    budget allowed a single pair (see ``bigvocab.bench.suites.speed``): a range of one ratio is no spread."""
    if timing is None:
        return MISSING
    if timing.repeats == 0:
        return f"{speedup(timing.speedup)} (1 call)"
    if timing.repeats == 1:
        return f"{speedup(timing.speedup)} (1 pair)"
    return f"{speedup(timing.speedup)} [{speedup(timing.q1)[:-1]}–{speedup(timing.q3)[:-1]}]"


def speedup_marked(timing: OperationTiming | None) -> str:
    """The median speed-up, with ``*`` when it comes from a single unpaired call."""
    if timing is None:
        return MISSING
    return speedup(timing.speedup) + ("*" if timing.repeats == 0 else "")


def number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return MISSING
    return f"{value:,.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    return MISSING if value is None else f"{value:.{digits}f}%"


def perplexity(test_ppl: float | None, ratio: float | None) -> str:
    """``"123.4 (1.52x floor)"``, or the bare perplexity when the corpus has no known floor."""
    if test_ppl is None:
        return MISSING
    text = number(test_ppl)
    return text if ratio is None else f"{text} ({ratio:.2f}x floor)"


def vocab(value: int) -> str:
    """10000 -> "10k", 1000000 -> "1M", 2500 -> "2.5k"."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if value >= scale:
            text = f"{value / scale:.3g}"
            return text + unit
    return str(value)


LABEL_WIDTH = 16

SPEED_HEADER = (
    f"{'V':>6}  {'approach':<{LABEL_WIDTH}} {'train speed-up [IQR]':>24} {'log_softmax':>11} {'top-10':>8} "
    f"{'fitted':>8} "
    f"{'params':>7} {'step MiB':>9} {'GFLOP/s':>8}  status"
)
QUALITY_HEADER = (
    f"{'corpus':<16} {'approach':<{LABEL_WIDTH}} {'test perplexity':>26} {'train s':>8} {'eval s':>7}  status"
)


def _status(status: str, error: str) -> str:
    if status != "ok":
        return f"ERROR {error}"
    return f"ok; {error}" if error else "ok"  # an ok row's note: operations skipped as too slow


def speed_line(row: SpeedRow) -> str:
    """The fraction of the matmul rate is known only at the end of the run (the files have it);
    the line shows the achieved rate it will be computed from. ``*``: one unpaired call."""
    timing = row.timings.get
    return (
        f"{vocab(row.vocab_size):>6}  {row.approach:<{LABEL_WIDTH}} "
        f"{speedup_spread(timing('train')):>24} {speedup_marked(timing('log_softmax')):>11} "
        f"{speedup_marked(timing('topk')):>8} {speedup_marked(timing('topk_fitted')):>8} "
        f"{percent(row.params_pct, 0):>7} "
        f"{number(row.peak_step_mib):>9} {number(row.achieved_gflops):>8}  "
        f"{_status(row.status, row.error)}"
    )


def quality_line(row: QualityRow) -> str:
    return (
        f"{row.dataset:<16} {row.approach:<{LABEL_WIDTH}} {perplexity(row.test_ppl, row.ppl_ratio):>26} "
        f"{number(row.train_seconds):>8} {number(row.eval_seconds):>7}  {_status(row.status, row.error)}"
    )
