"""How the bench prints: number formats shared by the terminal table and the markdown report,
and the terminal table itself, one line per row as soon as it is measured."""

from __future__ import annotations

from typing import Optional

MISSING = "–"


def speedup(value: Optional[float]) -> str:
    """1.234 -> "1.23x", 123.4 -> "123x"; None -> "–"."""
    if value is None:
        return MISSING
    digits = 2 if value < 10 else (1 if value < 100 else 0)
    return f"{value:.{digits}f}x"


def speedup_spread(row: dict, operation: str) -> str:
    """``"12.3x [11.9–12.8]"``: the median with the interquartile range of the paired ratios;
    ``"0.01x (1 call)"`` for an operation too slow to repeat (see ``bigvocab.bench.speed``)."""
    median = row.get(f"{operation}_speedup")
    if median is None:
        return MISSING
    if row.get(f"{operation}_repeats") == 0:
        return f"{speedup(median)} (1 call)"
    low, high = row.get(f"{operation}_q1"), row.get(f"{operation}_q3")
    if low is None or high is None:
        return speedup(median)
    return f"{speedup(median)} [{speedup(low)[:-1]}–{speedup(high)[:-1]}]"


def speedup_marked(row: dict, operation: str) -> str:
    """The median speed-up, with ``*`` when it comes from a single unpaired call."""
    text = speedup(row.get(f"{operation}_speedup"))
    return text + "*" if row.get(f"{operation}_repeats") == 0 else text


def number(value: Optional[float], digits: int = 1) -> str:
    if value is None:
        return MISSING
    return f"{value:,.{digits}f}"


def percent(value: Optional[float], digits: int = 1) -> str:
    return MISSING if value is None else f"{value:.{digits}f}%"


def perplexity(row: dict) -> str:
    """``"123.4 (1.52x floor)"``, or the bare perplexity when the corpus has no known floor."""
    if row.get("test_ppl") is None:
        return MISSING
    text = number(row["test_ppl"])
    ratio = row.get("ppl_ratio")
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


def _status(row: dict) -> str:
    if row.get("status") != "ok":
        return f"ERROR {row.get('error', '')}"
    if row.get("time_capped"):
        return f"ok, stopped by the time cap after {row['tokens_seen']:,} tokens"
    return "ok"


def speed_line(row: dict) -> str:
    """The fraction of the matmul rate is known only at the end of the run (the files have it);
    the line shows the achieved rate it will be computed from. ``*``: one unpaired call."""
    return (
        f"{vocab(row['vocab_size']):>6}  {row['approach']:<{LABEL_WIDTH}} "
        f"{speedup_spread(row, 'train'):>24} {speedup_marked(row, 'log_softmax'):>11} "
        f"{speedup_marked(row, 'topk'):>8} {speedup_marked(row, 'topk_fitted'):>8} "
        f"{percent(row.get('params_pct'), 0):>7} "
        f"{number(row.get('peak_step_mib')):>9} {number(row.get('achieved_gflops')):>8}  "
        f"{_status(row)}"
    )


def quality_line(row: dict) -> str:
    return (
        f"{row['dataset']:<16} {row['approach']:<{LABEL_WIDTH}} {perplexity(row):>26} "
        f"{number(row.get('train_seconds')):>8} {number(row.get('eval_seconds')):>7}  {_status(row)}"
    )
