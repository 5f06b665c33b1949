"""``cnn`` -- CNN-softmax (Jozefowicz, Vinyals, Schuster, Shazeer & Wu 2016).

The sampled softmax (:mod:`bigvocab.outputs.sampled`) over the ``cnn`` scorer
(:mod:`bigvocab.outputs.scorers.cnn`): output embeddings e_w = CharCNN(w) + P c_w computed from
each word's spelling plus a small per-word correction. As in the paper, training draws k words
from a proposal Q (``log_uniform`` by default, the TensorFlow default for frequency-sorted ids),
shared by the batch, with the log-Q correction and accidental hits removed, so the CNN runs on
only the distinct words among the N targets and k samples of a step. Evaluation is exact.

Any other objective trains the same scorer: ``create_output("full", H, V, scorer="cnn",
words=...)`` is the exact loss that runs the CNN over the whole vocabulary at every step,
``create_output("nce", H, V, scorer="cnn", words=...)`` NCE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bigvocab.outputs.sampled import SampledSoftmax
from bigvocab.outputs.sampling import SamplerSpec
from bigvocab.registry import OUTPUTS


@OUTPUTS.register("cnn")
class CNNSoftmax(SampledSoftmax):
    """Sampled softmax over output embeddings from a character CNN; exact evaluation.

    Args:
        words: the V vocabulary strings (required).
        num_samples: k words drawn per training step (default min(1024, V - 1)).
        sampler: the proposal, a name or a Sampler (default ``log_uniform``).
        counts: class frequencies, for samplers that read them (``unigram``).
        correction_dim, char_dim, filters, highway_layers, max_word_length, bias,
            max_chunk_elements, device, dtype: as for the scorer
            (:class:`~bigvocab.outputs.scorers.cnn.CNNScorer`).
    """

    retrieval_variants = {}  # its CharCNN scores spellings, which labelled rows do not have

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        words: Sequence[str] | None = None,
        num_samples: int | None = None,
        sampler: SamplerSpec = None,
        counts: Sequence[float] | None = None,
        **cnn_options: Any,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            num_samples=num_samples,
            sampler=sampler,
            counts=counts,
            shared=True,
            unique=False,
            words=words,
            **cnn_options,
        )

    default_scorer = "cnn"

    @classmethod
    def accepted_options(cls, options: Mapping[str, Any]) -> set[str] | None:
        """Its own keywords and the cnn scorer's (the scorer is not a choice here)."""
        accepted = super().accepted_options({})
        return None if accepted is None else accepted - {"scorer"}

    @staticmethod
    def _default_sampler(counts: Sequence[float] | None) -> tuple[str, dict]:
        return ("log_uniform", {})
