"""bigvocab: every large-vocabulary output layer behind one interface, with exact evaluation."""
from bigvocab import outputs, samplers  # noqa: F401  (importing registers the methods)
from bigvocab.errors import BigvocabError, CheckpointError, ConfigError, DataError, NonFiniteError, UnknownNameError
from bigvocab.factory import create_output, create_sampler, list_outputs, list_samplers
from bigvocab.outputs.base import OutputLayer
from bigvocab.samplers.base import Sampler

__version__ = "0.1.0"

__all__ = [
    "BigvocabError",
    "CheckpointError",
    "ConfigError",
    "DataError",
    "NonFiniteError",
    "OutputLayer",
    "Sampler",
    "UnknownNameError",
    "create_output",
    "create_sampler",
    "list_outputs",
    "list_samplers",
]
