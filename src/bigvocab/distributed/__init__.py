"""Past one process: vocabulary-parallel output layers on ``torch.distributed``.

* :mod:`~bigvocab.distributed.partition` -- which rank owns which classes (contiguous ranges
  balanced by row count);
* :mod:`~bigvocab.distributed.groups` -- the shard of a rank and the autograd-aware collectives,
  always over an explicitly given process group;
* :mod:`~bigvocab.distributed.vocab_parallel` -- the sharded linear softmax: exact log Z, candidate
  scores, log-softmax and top-k;
* :mod:`~bigvocab.distributed.scorer` -- the ``sharded`` scorer, and :func:`vocab_parallel`, which
  asks a layer to split itself (:meth:`~bigvocab.outputs.base.OutputLayer.shard_vocabulary`);
* layers with a structure of their own split themselves; their sharded forms live beside them in
  :mod:`bigvocab.outputs` and build on the collectives and row layouts here;
* :mod:`~bigvocab.distributed.rows` -- which rows of a parameter each rank holds (the layouts the
  checkpoint helpers gather and cut);
* :mod:`~bigvocab.distributed.data_parallel` -- gradients (dense and sparse) averaged over ranks;
* :mod:`~bigvocab.distributed.checkpoint` -- shards <-> one-process state dicts (model and optimiser);
* :mod:`~bigvocab.distributed.training` -- one rank's part in a ``Trainer`` run under ``torchrun``.
"""
from bigvocab.distributed.checkpoint import gather_state_dict, shard_state_dict
from bigvocab.distributed.data_parallel import average_gradients, broadcast_module, shard_batches
from bigvocab.distributed.groups import VocabShard, vocab_shard
from bigvocab.distributed.partition import VocabPartition
from bigvocab.distributed.scorer import VocabParallelScorer, vocab_parallel
from bigvocab.distributed.training import DistributedTraining

__all__ = [
    "DistributedTraining",
    "VocabPartition",
    "VocabParallelScorer",
    "VocabShard",
    "average_gradients",
    "broadcast_module",
    "gather_state_dict",
    "shard_batches",
    "shard_state_dict",
    "vocab_parallel",
    "vocab_shard",
]
