"""Past one process: the ``torch.distributed`` machinery that vocabulary-parallel layers and
distributed training build on.

* :mod:`~bigvocab.distributed.partition` -- which rank owns which classes (contiguous ranges
  balanced by row count);
* :mod:`~bigvocab.distributed.groups` -- the shard of a rank and the autograd-aware collectives,
  always over an explicitly given process group;
* :mod:`~bigvocab.distributed.rows` -- which rows of a parameter each rank holds (the layouts the
  checkpoint helpers gather and cut);
* :mod:`~bigvocab.distributed.data_parallel` -- gradients (dense and sparse) averaged over ranks;
* :mod:`~bigvocab.distributed.checkpoint` -- shards <-> one-process state dicts (model and optimiser);
* :mod:`~bigvocab.distributed.training` -- one rank's part in a ``Trainer`` run under ``torchrun``.

The output layers' sharded forms -- the sharded linear softmax, the ``VocabParallelScorer``,
``hsm``'s and ``adaptive``'s splits, and :func:`~bigvocab.outputs.parallel.vocab_parallel` --
live beside the layers they split, in :mod:`bigvocab.outputs.parallel`; nothing here knows an
output layer.
"""

from bigvocab.distributed.checkpoint import gather_state_dict, shard_state_dict
from bigvocab.distributed.data_parallel import average_gradients, broadcast_module, shard_batches
from bigvocab.distributed.groups import VocabShard, vocab_shard
from bigvocab.distributed.partition import VocabPartition
from bigvocab.distributed.training import DistributedTraining

__all__ = [
    "DistributedTraining",
    "VocabPartition",
    "VocabShard",
    "average_gradients",
    "broadcast_module",
    "gather_state_dict",
    "shard_batches",
    "shard_state_dict",
    "vocab_shard",
]
