"""Vocabulary-parallel output layers: each sharded form beside the layer it splits.

* :mod:`~bigvocab.outputs.parallel.functional` -- the sharded linear softmax: exact log Z,
  candidate scores, log-softmax and top-k over rows split by class range;
* :mod:`~bigvocab.outputs.parallel.scorer` -- :class:`VocabParallelScorer`, the linear rows of
  every objective split over ranks, and :func:`vocab_parallel`, which asks a built layer to split
  itself (:meth:`~bigvocab.outputs.base.OutputLayer.shard_vocabulary`);
* :mod:`~bigvocab.outputs.parallel.hsm` -- ``hsm`` with its top replicated and whole subtrees
  owned by ranks;
* :mod:`~bigvocab.outputs.parallel.adaptive` -- ``adaptive`` with its head replicated and every
  tail cluster's rows split.

They build on the collectives, partitions and row layouts of :mod:`bigvocab.distributed`.
Importing this package loads ``torch.distributed``; the layers import it only when they split.
"""

from bigvocab.outputs.parallel.adaptive import VocabParallelAdaptive
from bigvocab.outputs.parallel.hsm import VocabParallelHSM
from bigvocab.outputs.parallel.scorer import VocabParallelScorer, vocab_parallel

__all__ = ["VocabParallelAdaptive", "VocabParallelHSM", "VocabParallelScorer", "vocab_parallel"]
