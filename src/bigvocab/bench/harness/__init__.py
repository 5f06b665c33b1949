"""What every measurement of the bench shares; nothing here imports a suite.

* :mod:`~bigvocab.bench.harness.config` -- the settings of a run (``--quick``, ``--full``);
* :mod:`~bigvocab.bench.harness.selection` -- which rows run: every registered layer and variant,
  and the PyTorch peers (:mod:`~bigvocab.bench.harness.peers`);
* :mod:`~bigvocab.bench.harness.side_data` -- the counts, spellings and vectors a row's layer
  reads, and building it;
* :mod:`~bigvocab.bench.harness.operations` -- the shared workload and the timed operations;
* :mod:`~bigvocab.bench.harness.timing` -- paired timings and their summary;
* :mod:`~bigvocab.bench.harness.rows` -- the rows of the results;
* :mod:`~bigvocab.bench.harness.journal` -- the finished rows on disk, for ``--resume``;
* :mod:`~bigvocab.bench.harness.machine` -- what ran it;
* :mod:`~bigvocab.bench.harness.formatting`, :mod:`~bigvocab.bench.harness.plots` -- console
  lines and figures.
"""
