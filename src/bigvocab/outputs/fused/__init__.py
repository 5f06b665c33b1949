"""Optimisers whose update of a sparse layer's rows runs inside the backward
(:class:`~bigvocab.outputs.fused.rows.FusedRowOptimizer`), registered in
:data:`~bigvocab.registry.ROW_OPTIMIZERS`: ``sgd``, ``adagrad``, ``rowwise_adagrad``, ``sparse_adam``.
A layer attaches one with ``OutputLayer.fuse_optimizer``."""

from bigvocab.outputs.fused import adagrad, rowwise_adagrad, sgd, sparse_adam  # noqa: F401  (registers)
from bigvocab.outputs.fused.rows import FusedRowOptimizer, fused_gather

__all__ = ["FusedRowOptimizer", "fused_gather"]
