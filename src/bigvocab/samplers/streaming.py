"""Yi et al. 2019's streaming frequency estimator ("Sampling-bias-corrected neural modeling for
large corpus item recommendations", Algorithms 2 and 3): how often an id occurs in a training
step, estimated from the stream itself, with no offline count pass and following drift.

Arrays over hash buckets: A, the last step at which a bucket was seen, B, the estimated number
of steps between its occurrences, and n, the number of gaps it has seen. At step t, for every
distinct bucket i of the step's ids,

    n_i <- n_i + 1,    B_i <- B_i + max(α, 1/n_i) (t - A_i - B_i),    A_i <- t,

so B is the plain mean of the first 1/α gaps and Yi et al.'s moving average B <- (1 - α) B + α gap
after them. On a bucket's first occurrence there is no gap yet: B_i <- t, the wait since step 0, is
the estimate until the second occurrence replaces it. The estimated probability that id y occurs
in a step is p̂(y) = 1 / B[h(y)]; with several hash functions, 1 / max_j B_j[h_j(y)], since a
collision only shortens the gaps a bucket sees (Algorithm 3). An id never seen gets 1 / (t + 1),
the estimate it would get if it appeared at the next step.

*Why the wait since step 0 is dropped, and the first gaps averaged.* Yi et al. blend every gap
into B at rate α from the first, which leaves the first gaps with almost all the weight for the
first hundred occurrences at α = 0.01 ((1 - α)^(n-1) on the first). For i.i.d. steps that is
unbiased but noisy; for a stream read in epochs -- every training row once per epoch, in a new
order -- it is biased: an id in one row per epoch of E steps first appears at a uniform step in
[1, E], a wait of E/2 on average against its true gap of E, so p̂ stays near twice the truth for
a hundred epochs (on ``bench --retrieval``'s task at 100k labels, log p̂/π was +0.67 on average
for labels with π in [0.01, 0.1) after 8 epochs). The gaps between occurrences average E under
either kind of stream, and averaging the first 1/α of them gives each the same weight.

Each step counts an id once however often it occurs in the step, so p̂ estimates the probability
that an id is *among* a step's ids -- the inclusion probability that the log-Q correction of
in-batch candidates needs (Yi et al. update per occurrence; with repeats in a batch that drives
gaps to 0 and p̂ past 1).

**Variance.** For an id in each step independently with probability p, the gaps are geometric
with mean σ = 1/p and variance σ² = (1 - p)/p², so E[B] = 1/p after any number n of gaps, and
with m = ⌊1/α⌋, Var[B] = σ²/n for n <= m and
σ² [(1 - α)^(2(n-m)) / m + α/(2 - α) (1 - (1 - α)^(2(n-m)))] after, which tends to
α/(2 - α) (1 - p)/p²: the relative error of p̂ is about sqrt(α (1 - p)/(2 - α)) (7% at α = 0.01).
After a change of rate the old gaps' weight decays as (1 - α)^n over the next n occurrences.

The state is buffers, so it is saved in ``state_dict`` (and checkpoints) and a resumed run
continues it exactly.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.validation import check_positive_int, check_probability

#: Hash family ((a y + b) mod P) mod buckets with the Mersenne prime P = 2^31 - 1: a < P and
#: y < 2^31 keep a y within int64.
HASH_PRIME = (1 << 31) - 1


class StreamingFrequency(nn.Module):
    """Estimated per-step occurrence probability of ``num_classes`` ids, learned online.

    Args:
        num_classes: V; ids lie in [0, V).
        alpha: the learning rate α of the gap estimate, in (0, 1]: larger follows drift faster,
            smaller is less noisy.
        buckets: hash buckets per hash function; None is one per class (no collisions, no hashing).
        num_hashes: hash functions (Yi et al.'s Algorithm 3); more than one needs ``buckets``.
        seed: picks the hash functions.
        device: where the arrays live.

    Buffers: ``step`` (), ``last_seen`` and ``gaps_seen`` (num_hashes, buckets) int64, ``gap``
    (num_hashes, buckets) float64.
    """

    step: Tensor
    last_seen: Tensor
    gaps_seen: Tensor
    gap: Tensor
    hash_a: Tensor
    hash_b: Tensor

    def __init__(
        self,
        num_classes: int,
        *,
        alpha: float = 0.01,
        buckets: int | None = None,
        num_hashes: int = 1,
        seed: int = 0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = check_positive_int("num_classes", num_classes)
        self.alpha = check_probability("alpha", alpha, allow_zero=False)
        self.num_hashes = check_positive_int("num_hashes", num_hashes)
        if num_classes >= HASH_PRIME:
            raise ConfigError(f"StreamingFrequency hashes ids below {HASH_PRIME}, got num_classes={num_classes}")
        if buckets is None and num_hashes > 1:
            raise ConfigError("num_hashes > 1 needs buckets= (with one bucket per class there is nothing to hash)")
        self.buckets = num_classes if buckets is None else check_positive_int("buckets", buckets)
        self.hashed = buckets is not None
        generator = torch.Generator().manual_seed(seed)
        # Derived from the constructor's arguments, so not part of the state dict.
        hash_a = torch.randint(1, HASH_PRIME, (num_hashes, 1), generator=generator)
        hash_b = torch.randint(0, HASH_PRIME, (num_hashes, 1), generator=generator)
        self.register_buffer("hash_a", hash_a.to(device), persistent=False)
        self.register_buffer("hash_b", hash_b.to(device), persistent=False)
        self.register_buffer("step", torch.zeros((), dtype=torch.long, device=device))
        self.register_buffer("last_seen", torch.zeros(num_hashes, self.buckets, dtype=torch.long, device=device))
        self.register_buffer("gaps_seen", torch.zeros(num_hashes, self.buckets, dtype=torch.long, device=device))
        self.register_buffer("gap", torch.zeros(num_hashes, self.buckets, dtype=torch.float64, device=device))

    def bucket_of(self, ids: Tensor) -> Tensor:
        """(num_hashes, M) buckets of the ids (M,)."""
        flat = ids.reshape(1, -1).to(device=self.gap.device, dtype=torch.long)
        if not self.hashed:
            return flat
        return (self.hash_a * flat + self.hash_b) % HASH_PRIME % self.buckets

    @torch.no_grad()
    def update(self, ids: Tensor) -> None:
        """Advance one step in which ``ids`` (any shape, in [0, V)) occurred; each distinct bucket
        counts once."""
        self.step += 1
        buckets = self.bucket_of(ids)
        for row in range(self.num_hashes):
            seen = torch.unique(buckets[row])
            last = self.last_seen[row].index_select(0, seen)
            gaps = self.gaps_seen[row].index_select(0, seen) + (last > 0).long()
            gap = self.gap[row].index_select(0, seen)
            rate = gaps.double().reciprocal().clamp(min=self.alpha)
            blended = gap + rate * ((self.step - last).double() - gap)
            first = self.step.double().expand_as(blended)
            self.gap[row].index_copy_(0, seen, torch.where(last == 0, first, blended))
            self.gaps_seen[row].index_copy_(0, seen, gaps)
            self.last_seen[row].index_fill_(0, seen, self.step)

    @torch.no_grad()
    def probability(self, ids: Tensor) -> Tensor:
        """p̂ (float64, the shape of ``ids``): 1 / B of the id's bucket (the largest B over the hash
        functions), 1 / (step + 1) for an id not seen yet."""
        buckets = self.bucket_of(ids)
        gap = self.gap.gather(1, buckets).amax(dim=0)
        seen = (self.last_seen.gather(1, buckets) > 0).all(dim=0)
        unseen = 1.0 / (self.step.double() + 1.0)
        return torch.where(seen, gap.reciprocal(), unseen).reshape(ids.shape)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A state saved before ``gaps_seen`` existed blended every gap at rate α: it continues so,
        # as if each bucket seen had passed its first 1/α gaps.
        key = prefix + "gaps_seen"
        if key not in state_dict and prefix + "last_seen" in state_dict:
            seen = state_dict[prefix + "last_seen"] > 0
            state_dict[key] = seen.long() * math.ceil(1 / self.alpha)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def log_probability(self, ids: Tensor) -> Tensor:
        """log p̂ (float64), the shape of ``ids``."""
        return self.probability(ids).log()

    def extra_repr(self) -> str:
        hashing = f", buckets={self.buckets}, num_hashes={self.num_hashes}" if self.hashed else ""
        return f"num_classes={self.num_classes}, alpha={self.alpha}{hashing}"
