"""Scorers: how a word is scored (see :mod:`bigvocab.outputs.scorers.base`). Importing this
package registers every kind."""

from bigvocab.outputs.scorers import cnn, linear  # noqa: F401  (registers)
from bigvocab.outputs.scorers.base import Scorer
from bigvocab.outputs.scorers.rows import RowScorer

__all__ = ["RowScorer", "Scorer"]
