"""What some layers need besides H and V, and building any row's layer from it.

``counts`` go to every layer (the factory passes them only to those that read them); ``words``
(for ``cnn``), ``vectors`` (for the ``clustered`` hsm tree) and ``num_samples`` only to layers
whose constructor names them, so one generic builder serves every registered layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from bigvocab.bench.harness.selection import Candidate
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import create_output, output_side_inputs
from bigvocab.registry import OUTPUTS, PEERS, build

#: Width of the word vectors that the clustered tree is built from.
VECTOR_DIM = 16


@dataclass
class SideData:
    """Frequencies, spellings and (lazily) word vectors of a V-word vocabulary."""

    counts: list[int]
    words: list[str]
    make_vectors: Callable[[], Tensor]
    description: str
    _vectors: Tensor | None = field(default=None, repr=False)

    def vectors(self) -> Tensor:
        """(V, VECTOR_DIM) word vectors, computed on first use (they cost O(V) or a pass over data)."""
        if self._vectors is None:
            self._vectors = self.make_vectors()
        return self._vectors


def synthetic_side_data(vocab_size: int, *, num_classes: int = 50, seed: int = 0) -> SideData:
    """Side data of the synthetic language with V words: its stationary unigram as counts (of a
    notional 10^9-token corpus) and vectors that know each word's class, for the speed runs."""
    from bigvocab.data.synthetic import SyntheticLanguage

    language = SyntheticLanguage(vocab_size=vocab_size, num_classes=min(num_classes, vocab_size), seed=seed)
    counts = (language.unigram.double() * 1e9).round().clamp(min=1).long().tolist()

    def make_vectors() -> Tensor:
        return class_vectors(language.word_class, seed=seed)

    return SideData(counts, list(language.words), make_vectors, "synthetic class of each word + noise")


def class_vectors(word_class: Tensor, *, seed: int = 0, noise: float = 0.3) -> Tensor:
    """(V, VECTOR_DIM): a random centroid per class plus Gaussian noise per word, so that a tree
    learned by clustering them (Mnih & Hinton 2008) can recover the classes."""
    generator = torch.Generator().manual_seed(seed)
    num_classes = int(word_class.max()) + 1
    centroids = torch.randn(num_classes, VECTOR_DIM, generator=generator)
    return centroids[word_class.long()] + noise * torch.randn(word_class.numel(), VECTOR_DIM, generator=generator)


def context_vectors(ids: Tensor, vocab_size: int, *, seed: int = 0) -> Tensor:
    """(V, VECTOR_DIM) distributional word vectors from a training stream ``ids`` (T,).

    Each word is described by the counts of its left and right neighbours (a V x 2V matrix,
    log(1 + count)), reduced by a randomised truncated SVD -- the classic way to get vectors
    whose clusters follow syntactic/semantic classes (Brown et al. 1992 cluster the same
    statistics). Unseen words get small random vectors so that a clustering can still place them.
    """
    ids = ids.long()
    prev, nxt = ids[:-1], ids[1:]
    rows = torch.cat([nxt, prev])
    cols = torch.cat([prev, nxt + vocab_size])
    matrix = torch.sparse_coo_tensor(
        torch.stack([rows, cols]), torch.ones(rows.numel()), (vocab_size, 2 * vocab_size), check_invariants=True
    ).coalesce()
    matrix = torch.sparse_coo_tensor(matrix.indices(), matrix.values().log1p(), matrix.shape, check_invariants=False)
    torch.manual_seed(seed)  # svd_lowrank draws its random projection from the global generator
    rank = min(VECTOR_DIM, vocab_size - 1)
    left, singular, _ = torch.svd_lowrank(matrix, q=rank, niter=2)
    vectors = left * singular.sqrt()
    if rank < VECTOR_DIM:
        vectors = torch.cat([vectors, vectors.new_zeros(vocab_size, VECTOR_DIM - rank)], 1)
    generator = torch.Generator().manual_seed(seed)
    return vectors + 1e-3 * torch.randn(vocab_size, VECTOR_DIM, generator=generator)


def build_layer(
    candidate: Candidate, in_features: int, num_classes: int, side: SideData, *, num_samples: int | None
) -> tuple[OutputLayer, dict]:
    """The row's output layer and a printable record of its options (with the k it uses)."""
    if candidate.kind == "peer":
        return build(PEERS, candidate.method, (in_features, num_classes), {"counts": side.counts}, {}), {}
    options = dict(candidate.options)
    shown = dict(candidate.options)
    needs = output_side_inputs(candidate.method, **options)
    if "words" in needs:
        options["words"] = side.words
        shown["words"] = f"<{len(side.words)} strings>"
    if "vectors" in needs:
        options["vectors"] = side.vectors()
        shown["vectors"] = f"<{side.description}>"
    if num_samples is not None and "num_samples" in (OUTPUTS.get(candidate.method).accepted_options(options) or ()):
        options["num_samples"] = num_samples
    layer = create_output(candidate.method, in_features, num_classes, counts=side.counts, **options)
    if hasattr(layer, "num_samples"):
        shown["num_samples"] = layer.num_samples  # the k in use, the layer's default included
    return layer, shown
