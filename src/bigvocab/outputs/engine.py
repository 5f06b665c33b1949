"""What word2vec's compiled engine (:mod:`bigvocab.word2vec`) reads from an output layer.

word2vec.c implements two output layers' updates by hand; a bigvocab layer that trains the same
way declares it, so that the engine reads declarations and names no layer:

* ``engine_kind`` (class attribute): ``"neg"`` -- negative sampling over one free output row per
  word (word2vec's ``syn1neg``) -- or ``"hs"`` -- a hierarchical softmax over a binary tree, one
  vector per internal node (``syn1``); None for every other layer;
* ``engine_unsupported()``: why this instance cannot be trained so (a bias, a computed scorer, a
  tree with wider nodes, an adaptive sampler...), or None;
* ``_engine_tables()``: an :class:`EngineTables`, read through the public ``engine_tables()``.

``rows`` is the layer's own parameter, not a copy: the engine trains the model in place through
a numpy view of its memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

#: The updates the engine compiles (see the module docstring): negative sampling over free rows
#: (word2vec's ``syn1neg``) and a hierarchical softmax over a binary tree (``syn1``).
NEGATIVE_SAMPLING = "neg"
HIERARCHICAL_SOFTMAX = "hs"
ENGINE_KINDS = (NEGATIVE_SAMPLING, HIERARCHICAL_SOFTMAX)


@dataclass
class EngineTables:
    """The tensors the engine reads (all on the layer's device; the engine checks it is the CPU).

    Attributes:
        kind: one of :data:`ENGINE_KINDS`.
        rows: (R, H) output vectors the kernels update in place -- the layer's parameter itself
            (R = V for ``neg``, V - 1 internal nodes for ``hs``).
        num_samples: ``neg``: negatives per example (k).
        noise: ``neg``: (V,) probabilities the negatives are drawn from.
        path_offsets: ``hs``: (V + 1,) long, leaf w's path is entries
            ``path_offsets[w]:path_offsets[w + 1]`` of the next two, from the root down.
        path_rows: ``hs``: (sum of depths,) long, the row of ``rows`` of each node on the path.
        path_codes: ``hs``: (sum of depths,) long, the child (0 or 1) taken at that node.
    """

    kind: str
    rows: Tensor
    num_samples: int = 0
    noise: Tensor | None = None
    path_offsets: Tensor | None = None
    path_rows: Tensor | None = None
    path_codes: Tensor | None = None


def layer_for_engine_kind(kind: str) -> str:
    """The registered output layer that trains as word2vec's ``kind`` (``"neg"`` or ``"hs"``):
    how gensim's ``negative`` and ``hs`` flags pick a layer without code outside ``outputs/``
    naming one. Exactly one registered layer declares each kind."""
    from bigvocab.registry import OUTPUTS  # the layers register themselves when outputs/ is imported

    names = [name for name in OUTPUTS.names() if OUTPUTS.get(name).engine_kind == kind]
    if len(names) != 1:
        raise ValueError(f"expected one registered layer with engine_kind={kind!r}, found {names}")
    return names[0]


def engine_kind_of(name: str) -> str | None:
    """The ``engine_kind`` that the registered output layer ``name`` declares (None: none)."""
    from bigvocab.registry import OUTPUTS

    return OUTPUTS.get(name).engine_kind
