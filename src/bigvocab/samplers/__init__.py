"""Proposal distributions: importing this package registers every sampler."""
from bigvocab.samplers.base import Sampler

__all__ = ["Sampler"]
