"""Proposal distributions: importing this package registers every sampler; :func:`create_sampler`
builds one by name."""

# Registration order is the order list_samplers() shows.
from bigvocab.samplers import uniform, unigram, log_uniform, learned, bigram  # noqa: F401,I001  (registers)
from bigvocab.samplers.alias import AliasTable, build_alias_table
from bigvocab.samplers.base import Sampler, log_expected_count
from bigvocab.samplers.bigram import BigramSampler
from bigvocab.samplers.factory import create_sampler, list_samplers
from bigvocab.samplers.learned import LearnedSampler
from bigvocab.samplers.log_uniform import LogUniformSampler
from bigvocab.samplers.streaming import StreamingFrequency
from bigvocab.samplers.uniform import UniformSampler
from bigvocab.samplers.unigram import UnigramSampler

__all__ = [
    "AliasTable",
    "BigramSampler",
    "LearnedSampler",
    "LogUniformSampler",
    "Sampler",
    "StreamingFrequency",
    "UniformSampler",
    "UnigramSampler",
    "build_alias_table",
    "create_sampler",
    "list_samplers",
    "log_expected_count",
]
