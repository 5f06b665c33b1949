"""``bigvocab bench``: the comparison table of every registered output layer, measured here.

Speed (training step, exact ``log_softmax``, ``topk``) as paired ratios to ``full``, peak memory,
parameters and the fraction of the machine's matmul rate each step reaches; quality as the exact
test perplexity of one NNLM trained with each layer. See :class:`BenchConfig` and :func:`run_bench`.
"""

from bigvocab.bench.config import BenchConfig, QualityConfig
from bigvocab.bench.options import add_bench_arguments, config_from_args, main
from bigvocab.bench.runner import run_bench
from bigvocab.bench.selection import Candidate, all_candidates, select_candidates

__all__ = [
    "BenchConfig",
    "Candidate",
    "QualityConfig",
    "add_bench_arguments",
    "all_candidates",
    "config_from_args",
    "main",
    "run_bench",
    "select_candidates",
]
