"""``log_uniform`` -- the Zipfian proposal for frequency-sorted ids (TensorFlow's default).

Q(i) = log((i + 2) / (i + 1)) / log(V + 1). The cumulative sum telescopes to
P(id <= i) = log(i + 2) / log(V + 1), so inverting the CDF gives a closed-form draw:
id = floor(exp(u log(V + 1))) - 1 for u ~ U[0, 1). Needs no counts, only the convention that
id 0 is the most frequent class.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bigvocab.registry import SAMPLERS
from bigvocab.samplers.base import Sampler, uniform_floats
from bigvocab.validation import check_positive_int


@SAMPLERS.register("log_uniform")
class LogUniformSampler(Sampler):
    """Zipf-like proposal over ids sorted by decreasing frequency; O(1) per draw, no tables."""

    def sample(
        self, num_samples: int, *, context: Tensor | None = None, generator: torch.Generator | None = None
    ) -> Tensor:
        check_positive_int("num_samples", num_samples)
        # float64: at V = 1e6 float32 would merge neighbouring ids in the tail.
        u = uniform_floats((num_samples,), generator, self.device)
        ids = torch.expm1(u * math.log1p(self.num_classes)).floor_().long()
        return ids.clamp_(0, self.num_classes - 1)

    def log_q(self, ids: Tensor, *, context: Tensor | None = None) -> Tensor:
        rank = ids.to(torch.float64) + 1
        return (torch.log(torch.log1p(1 / rank)) - math.log(math.log1p(self.num_classes))).to(self.dtype)
