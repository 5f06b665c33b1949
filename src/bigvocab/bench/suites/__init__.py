"""The bench's measurements, each built on :mod:`bigvocab.bench.harness`.

* :mod:`~bigvocab.bench.suites.speed` -- training step, ``log_softmax`` and ``topk`` against ``full``;
* :mod:`~bigvocab.bench.suites.memory` -- peak memory of a step, in a child process;
* :mod:`~bigvocab.bench.suites.roofline` -- the machine's matmul rate and bandwidth, and the
  fraction of them each step reaches;
* :mod:`~bigvocab.bench.suites.quality` -- perplexity after a time budget of training;
* :mod:`~bigvocab.bench.suites.recommend` -- the fastest layer within reach of the best perplexity;
* :mod:`~bigvocab.bench.suites.ann` -- approximate top-k indexes (``--ann``);
* :mod:`~bigvocab.bench.suites.word2vec` -- the word2vec engine against gensim (``--word2vec``);
* :mod:`~bigvocab.bench.suites.distributed` -- one process against vocabulary-parallel ranks
  (``--distributed``).
"""
