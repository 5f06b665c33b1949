"""``bigvocab bench``: the comparison table of every registered output layer, measured here.

Speed (training step, exact ``log_softmax``, ``topk``) as paired ratios to ``full``, peak memory,
parameters and the fraction of the machine's matmul rate each step reaches; quality as the exact
test perplexity of one NNLM trained with each layer. See :class:`BenchConfig` and :func:`run_bench`.

* :mod:`~bigvocab.bench.harness` -- what every measurement shares: the run's settings, the rows
  and how they are chosen and built, workloads and steps, paired timing, the machine, the
  journal, the console lines and plots, the PyTorch peers;
* :mod:`~bigvocab.bench.suites` -- the measurements: speed, memory, roofline, quality and the
  recommendation, approximate top-k (``--ann``), word2vec against gensim (``--word2vec``),
  vocabulary-parallel steps (``--distributed``);
* :mod:`~bigvocab.bench.runner`, :mod:`~bigvocab.bench.report`, :mod:`~bigvocab.bench.options`
  -- the standard run over the suites, its files, and the command line.

A benchmark driver of its own measures what a row of the table measures with the names below,
without reaching into the modules: :func:`bench_layer` (a row's layer and its workload, e.g.
``bench_layer("hsm[balanced]", 1_000_000)``), :func:`make_optimizer` and :func:`training_step`
(the bench's step), and :func:`paired_timings` / :func:`paired_speedup` (two calls timed in
alternating pairs, summarised as a :class:`RatioSummary`).
"""

from bigvocab.bench.harness.config import BenchConfig, QualityConfig
from bigvocab.bench.harness.operations import Workload, bench_layer, make_optimizer, make_workload, training_step
from bigvocab.bench.harness.selection import Candidate, all_candidates, select_candidates
from bigvocab.bench.harness.timing import RatioSummary, paired_speedup, paired_timings
from bigvocab.bench.options import add_bench_arguments, config_from_args, main
from bigvocab.bench.runner import run_bench

__all__ = [
    "BenchConfig",
    "Candidate",
    "QualityConfig",
    "RatioSummary",
    "Workload",
    "add_bench_arguments",
    "all_candidates",
    "bench_layer",
    "config_from_args",
    "main",
    "make_optimizer",
    "make_workload",
    "paired_speedup",
    "paired_timings",
    "run_bench",
    "select_candidates",
    "training_step",
]
