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


class EmptyVocabularyError(DataError, RuntimeError):
    """A corpus from which no word survives into the vocabulary (a RuntimeError too, as gensim raises)."""


class CheckpointError(BigvocabError, RuntimeError):
    """A checkpoint that is missing, truncated or written by something else."""


class NonFiniteError(BigvocabError, FloatingPointError):
    """A NaN or Inf appeared during training."""


class WriteError(BigvocabError, OSError):
    """A file that cannot be written (permissions, a full disk); the message names the user's path."""


class RunLockedError(BigvocabError, RuntimeError):
    """A run directory that another live process is training in."""


class TrainingInterrupted(BigvocabError):
    """SIGINT or SIGTERM stopped a run after its current step: ``checkpoint`` is the ``last.pt`` it
    saved, ``step`` the optimiser steps it holds, ``signal_number`` the signal received, and
    ``position`` where the run stands in its words (e.g. "step 45 of 270 in epoch 2")."""

    def __init__(self, message: str, *, signal_number: int, checkpoint, step: int, position: str = "") -> None:
        super().__init__(message)
        self.signal_number = signal_number
        self.checkpoint = checkpoint
        self.position = position
        self.step = step
