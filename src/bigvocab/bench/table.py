"""The terminal table, one line per row as soon as it is measured."""

from __future__ import annotations

from bigvocab.bench import formatting as fmt

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
        f"{fmt.vocab(row['vocab_size']):>6}  {row['approach']:<{LABEL_WIDTH}} "
        f"{fmt.speedup_spread(row, 'train'):>24} {fmt.speedup_marked(row, 'log_softmax'):>11} "
        f"{fmt.speedup_marked(row, 'topk'):>8} {fmt.speedup_marked(row, 'topk_fitted'):>8} "
        f"{fmt.percent(row.get('params_pct'), 0):>7} "
        f"{fmt.number(row.get('peak_step_mib')):>9} {fmt.number(row.get('achieved_gflops')):>8}  "
        f"{_status(row)}"
    )


def quality_line(row: dict) -> str:
    return (
        f"{row['dataset']:<16} {row['approach']:<{LABEL_WIDTH}} {fmt.perplexity(row):>26} "
        f"{fmt.number(row.get('train_seconds')):>8} {fmt.number(row.get('eval_seconds')):>7}  {_status(row)}"
    )
