"""Exceptions raised for bad input.

Every error a user can cause derives from :class:`BigvocabError`, so the CLI can print its
message on one line and exit non-zero without a traceback, while programming errors inside the
library still surface as ordinary tracebacks.
"""
from __future__ import annotations


class BigvocabError(Exception):
    """A problem with the user's input, configuration or files."""


class ConfigError(BigvocabError, ValueError):
    """An argument or option whose value makes no sense (negative size, k >= V, ...)."""


class UnknownNameError(BigvocabError, ValueError):
    """A registry lookup with a name that is not registered."""


class DataError(BigvocabError, ValueError):
    """A corpus, vocabulary or evaluation file that is missing, empty or malformed."""


class CheckpointError(BigvocabError, RuntimeError):
    """A checkpoint that is missing, truncated or written by something else."""


class NonFiniteError(BigvocabError, FloatingPointError):
    """A NaN or Inf appeared during training."""
