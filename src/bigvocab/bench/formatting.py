"""Number formats shared by the terminal table and the markdown report."""

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
