"""``neg`` -- negative sampling (Mikolov et al. 2013), the objective of word2vec.

Per example, with target t and k negatives y_j drawn from the unigram distribution raised to 3/4:

    loss = -log σ(s_t) - Σ_j log σ(-s_{y_j}).

Unlike NCE there is no correction by the noise probability, so the scores do not estimate log
probabilities; word2vec only wants the vectors. Like word2vec, a negative equal to the target is
skipped. For a skip-gram model, ``hidden`` (N, H) holds the centre words' input vectors and
``target`` (N,) the context words; word2vec itself uses no output bias (``bias=False``) and starts
the output vectors at zero.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch.nn.functional as F
from torch import Tensor

from bigvocab.outputs.sampling import SamplerSpec, SamplingOutput, accidental_hits, check_flag
from bigvocab.registry import OUTPUTS


@OUTPUTS.register("neg")
class NegativeSampling(SamplingOutput):
    """Word2vec's negative-sampling loss; exact evaluation over the same (V, H) weights.

    Args:
        num_samples: k negatives (default min(5, V - 1), gensim's ``negative=5``).
        sampler: default ``unigram`` with ``power=0.75`` (word2vec's ``ns_exponent``; needs
            ``counts``).
        counts: training frequencies of the classes.
        shared: one negative set for the whole batch, or one per example (default, as word2vec).
        remove_accidental_hits: skip negatives equal to the example's target (as word2vec).
        bias, max_chunk_elements: as for ``full``.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: Optional[int] = None,
        sampler: SamplerSpec = None,
        counts: Optional[Sequence[float]] = None,
        shared: bool = False,
        remove_accidental_hits: bool = True,
        bias: bool = True,
        max_chunk_elements: Optional[int] = None,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            num_samples=num_samples,
            default_num_samples=5,
            sampler=sampler,
            default_sampler=("unigram", {"power": 0.75}),
            counts=counts,
            shared=shared,
            bias=bias,
            max_chunk_elements=max_chunk_elements,
        )
        self.remove_accidental_hits = check_flag("remove_accidental_hits", remove_accidental_hits)

    def _loss(self, hidden: Tensor, target: Tensor) -> Tensor:
        negatives, _ = self._draw(hidden.shape[0])
        # -log σ(-s) = softplus(s), stable for large |s|.
        negative_loss = F.softplus(self.class_logits(hidden, negatives))
        if self.remove_accidental_hits:
            negative_loss = negative_loss.masked_fill(accidental_hits(target, negatives), 0.0)
        self._observe(target)
        return F.softplus(-self.target_logits(hidden, target)) + negative_loss.sum(dim=1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", remove_accidental_hits={self.remove_accidental_hits}"
