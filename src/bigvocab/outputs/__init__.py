"""Output layers: importing this package registers every scorer and every method."""
from bigvocab.outputs import scorers  # noqa: F401  (registers the scorers)
from bigvocab.outputs import full  # noqa: F401  (registers)
from bigvocab.outputs import hsm  # noqa: F401  (registers)
from bigvocab.outputs import dsoftmax  # noqa: F401  (registers)
from bigvocab.outputs import cnn  # noqa: F401  (registers)
from bigvocab.outputs import adaptive  # noqa: F401  (registers)
from bigvocab.outputs import sampled  # noqa: F401  (registers)
from bigvocab.outputs import ais  # noqa: F401  (registers)
from bigvocab.outputs import target  # noqa: F401  (registers)
from bigvocab.outputs import nce  # noqa: F401  (registers)
from bigvocab.outputs import neg  # noqa: F401  (registers)
from bigvocab.outputs import selfnorm  # noqa: F401  (registers)
from bigvocab.outputs import infreq  # noqa: F401  (registers)
from bigvocab.outputs import char  # noqa: F401  (registers)
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.objective import ScoredOutput
from bigvocab.outputs.scorers import RowScorer, Scorer

__all__ = ["OutputLayer", "RowScorer", "ScoredOutput", "Scorer"]
