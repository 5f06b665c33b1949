"""Approximate top-k for linear softmax layers: an index over the output rows, exact rescoring.

``index = layer.build_index(kind=...)`` then ``layer.topk(hidden, k, index=index)``. Kinds:
``lsh`` (native, no dependency), ``faiss-ivf`` and ``faiss-hnsw`` (faiss-cpu), ``hnswlib``;
the library-backed ones need ``pip install 'bigvocab[ann]'``. Importing this package registers
every kind.
"""
from bigvocab.index import lsh  # noqa: F401  (registers)
from bigvocab.index import faiss_ivf  # noqa: F401  (registers)
from bigvocab.index import faiss_hnsw  # noqa: F401  (registers)
from bigvocab.index import hnsw  # noqa: F401  (registers)
from bigvocab.index.base import INDEXES, ApproxIndex, StaleIndexError, build_index, list_index_kinds

#: What ``build_index`` builds when no kind is named: the kind needing no extra package.
DEFAULT_KIND = "lsh"

__all__ = ["ApproxIndex", "StaleIndexError", "build_index", "list_index_kinds", "INDEXES", "DEFAULT_KIND"]
