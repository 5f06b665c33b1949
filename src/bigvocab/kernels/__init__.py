"""Every compiled loop of bigvocab (numba, ``nogil``), apart from the modules that call it.

* :mod:`~bigvocab.kernels.pairs` -- scores of chosen (row, class) pairs and their gradients,
  without gathering the rows (the sampling and tree layers' steps);
* :mod:`~bigvocab.kernels.trees` -- a hierarchical softmax's exact leaf log-probabilities in one
  top-down pass;
* :mod:`~bigvocab.kernels.ids` -- sorted distinct class ids by a bitmap;
* :mod:`~bigvocab.kernels.adagrad` -- Adagrad's update of the rows a sparse gradient touches;
* :mod:`~bigvocab.kernels.word2vec` -- word2vec's per-example SGD updates (the engine's loop);
* :mod:`~bigvocab.kernels.threads` -- a ``nogil`` kernel over ranges of equal work on Python threads;
* :mod:`~bigvocab.kernels.flags` -- the compiler flags every kernel carries.
* :mod:`~bigvocab.kernels.library` -- the ``bigvocab::`` operator library: the kernels a layer
  calls, as PyTorch operators that ``torch.compile``, FX and the meta device see.

Nothing here imports the rest of bigvocab: the layers, the word2vec engine and the optimiser
import these modules, on first use, so that ``import bigvocab`` does not load numba.
"""
