"""Past one process: vocabulary-parallel output layers on ``torch.distributed``.

* :mod:`~bigvocab.distributed.partition` -- which rank owns which classes (contiguous ranges
  balanced by row count);
* :mod:`~bigvocab.distributed.groups` -- the shard of a rank and the autograd-aware collectives,
  always over an explicitly given process group;
* :mod:`~bigvocab.distributed.vocab_parallel` -- the sharded linear softmax: exact log Z, candidate
  scores, log-softmax and top-k;
* :mod:`~bigvocab.distributed.layer` -- :func:`vocab_parallel` turns a linear-rows output layer
  (any objective) into this rank's part;
* :mod:`~bigvocab.distributed.checkpoint` -- shards <-> one-process state dicts.
"""
from bigvocab.distributed.checkpoint import gather_state_dict, shard_state_dict
from bigvocab.distributed.groups import VocabShard, vocab_shard
from bigvocab.distributed.layer import VocabParallelRows, vocab_parallel
from bigvocab.distributed.partition import VocabPartition

__all__ = [
    "VocabPartition",
    "VocabParallelRows",
    "VocabShard",
    "gather_state_dict",
    "shard_state_dict",
    "vocab_parallel",
    "vocab_shard",
]
