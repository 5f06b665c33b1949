"""Approximate top-k for linear softmax layers: an index over the output rows, exact rescoring.

``index = layer.build_index(kind=...)`` then ``layer.topk(hidden, k, index=index)``. Kinds:
``lsh`` (native, no dependency), ``faiss-ivf`` and ``faiss-hnsw`` (faiss-cpu), ``hnswlib``;
the library-backed ones need ``pip install 'bigvocab[ann]'``. Importing this package registers
every kind.
"""

# The import order is the registration order, which listings and the bench follow.
# isort: off
from bigvocab.index import lsh  # noqa: F401  (registers)
from bigvocab.index import faiss_ivf  # noqa: F401  (registers)
from bigvocab.index import faiss_hnsw  # noqa: F401  (registers)
from bigvocab.index import hnsw  # noqa: F401  (registers)

# isort: on
from bigvocab.index.base import ApproxIndex, StaleIndexError, build_index, list_index_kinds


def default_kind() -> str:
    """``faiss-ivf`` where faiss is installed (at V = 1M: recall@10 0.99 at ~160x over exact
    top-10, ``docs/approximate-topk.md``), else ``lsh``, the kind that needs nothing (and finds far less)."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return "lsh"
    return "faiss-ivf"


__all__ = ["ApproxIndex", "StaleIndexError", "build_index", "default_kind", "list_index_kinds"]
