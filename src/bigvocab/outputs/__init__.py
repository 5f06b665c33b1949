"""Output layers: importing this package registers every method."""
from bigvocab.outputs import full  # noqa: F401  (registers)
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.linear import LinearOutput

__all__ = ["OutputLayer", "LinearOutput"]
