"""``uniform`` -- every class equally likely: Q(i) = 1/V."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bigvocab.registry import SAMPLERS
from bigvocab.samplers.base import Sampler, uniform_ids
from bigvocab.validation import check_positive_int


@SAMPLERS.register("uniform")
class UniformSampler(Sampler):
    """The uniform proposal over ``num_classes`` ids; needs no counts."""

    def sample(
        self, num_samples: int, *, context: Tensor | None = None, generator: torch.Generator | None = None
    ) -> Tensor:
        check_positive_int("num_samples", num_samples)
        return uniform_ids(self.num_classes, (num_samples,), generator, self.device)

    def log_q(self, ids: Tensor, *, context: Tensor | None = None) -> Tensor:
        return torch.full(ids.shape, -math.log(self.num_classes), device=ids.device, dtype=self.dtype)
