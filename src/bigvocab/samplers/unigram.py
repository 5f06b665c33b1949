"""``unigram`` -- the training frequencies raised to a power, drawn with a Walker alias table.

``power=1`` is the plain unigram (Bengio & Senécal 2003; Mnih & Teh 2012); ``power=0.75`` is the
flattened unigram of word2vec's negative sampling (Mikolov et al. 2013).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.registry import SAMPLERS
from bigvocab.samplers.alias import AliasSampler, AliasTable
from bigvocab.samplers.base import required_counts
from bigvocab.validation import check_finite_float


@SAMPLERS.register("unigram")
class UnigramSampler(AliasSampler):
    """Q(i) proportional to counts[i] ** power; O(V) to build once, O(1) per draw.

    Args:
        num_classes: V.
        counts: (V,) training frequencies (required).
        power: exponent applied to the counts; a negative one favours rare classes (gensim's
            ``ns_exponent < 0``) and needs every count positive.
        device, dtype: see :class:`~bigvocab.samplers.base.Sampler`.
    """

    def __init__(
        self,
        num_classes: int,
        *,
        counts: Sequence[float] | Tensor | None = None,
        power: float = 1.0,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(num_classes, device=device, dtype=dtype)
        frequencies = required_counts(
            counts,
            num_classes,
            "the 'unigram' sampler",
            "choose a sampler that does not read them: 'uniform', 'log_uniform' or 'learned'",
        )
        self.power = check_finite_float("power", power)
        if self.power < 0 and bool((frequencies <= 0).any()):
            raise ConfigError(f"power={self.power} (negative) needs every count positive; a class has count 0")
        self.table = AliasTable(frequencies.pow(self.power), device=device)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", power={self.power}"
