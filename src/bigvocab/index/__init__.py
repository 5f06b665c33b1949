"""Approximate top-k for linear softmax layers: an index over the output rows, exact rescoring.

``index = layer.build_index(kind=...)`` then ``layer.topk(hidden, k, index=index)``. Kinds:
``ivf`` (a native inverted file), ``svd`` (SVD-softmax), ``screening`` (learned screening) and
``lsh``, which need nothing beyond the core; ``faiss-ivf`` and ``faiss-hnsw`` (faiss-cpu) and
``hnswlib``, which need ``pip install 'bigvocab[ann]'``. Importing this package registers every
kind.
"""

# The import order is the registration order, which listings and the bench follow.
# isort: off
from bigvocab.index import ivf  # noqa: F401  (registers)
from bigvocab.index import svd  # noqa: F401  (registers)
from bigvocab.index import screening  # noqa: F401  (registers)
from bigvocab.index import lsh  # noqa: F401  (registers)
from bigvocab.index import faiss_ivf  # noqa: F401  (registers)
from bigvocab.index import faiss_hnsw  # noqa: F401  (registers)
from bigvocab.index import hnsw  # noqa: F401  (registers)

# isort: on
from bigvocab.index import optional
from bigvocab.index.base import ApproxIndex, StaleIndexError, build_index, list_index_kinds


def default_kind() -> str:
    """``faiss-ivf`` where faiss is installed, else ``ivf``, the same method natively (both reach
    recall@10 >= 0.95 far above exact top-10's speed on trained weights, ``docs/approximate-topk.md``)."""
    return "faiss-ivf" if optional.installed("faiss") else "ivf"


__all__ = ["ApproxIndex", "StaleIndexError", "build_index", "default_kind", "list_index_kinds"]
