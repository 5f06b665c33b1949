"""bigvocab: every large-vocabulary output layer behind one interface, with exact evaluation."""

from bigvocab import outputs, samplers  # noqa: F401  (importing registers the methods)
from bigvocab.errors import BigvocabError, CheckpointError, ConfigError, DataError, NonFiniteError, UnknownNameError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import create_output, list_outputs
from bigvocab.samplers.base import Sampler, zipf_counts
from bigvocab.samplers.factory import create_sampler, list_samplers
from bigvocab.word2vec import KeyedVectors, Word2Vec

__version__ = "0.2.0"

__all__ = [
    "BigvocabError",
    "CheckpointError",
    "ConfigError",
    "DataError",
    "KeyedVectors",
    "NonFiniteError",
    "OutputLayer",
    "Sampler",
    "UnknownNameError",
    "Word2Vec",
    "create_output",
    "create_sampler",
    "list_outputs",
    "list_samplers",
    "zipf_counts",
]
