"""The :class:`Sampler` contract: a proposal distribution Q over class ids.

Sampling-based output layers (``sampled``, ``ais``, ``nce``, ``neg``, ...) take a sampler through
their constructor and use only this interface, so any proposal works with any of them.
Samplers are modules so that learned state (counts, mixture weights) travels in checkpoints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.validation import check_positive_int

#: ``sample_unique`` gives up after this many draws (128 MiB of ids): the proposal then puts
#: too little mass on too many classes for ``k`` distinct ids to be found.
MAX_UNIQUE_DRAWS = 1 << 24


class Sampler(nn.Module):
    """A proposal distribution over ``num_classes`` ids.

    Subclasses implement :meth:`sample` and :meth:`log_q`; adaptive ones also :meth:`update`.
    ``context`` is the conditioning information of context-dependent proposals (the previous
    token for ``bigram``) and is ignored by the others.

    ``device`` is where the sampler's tables live and its ids are drawn; ``dtype`` that of the
    log-probabilities :meth:`log_q` returns (the default dtype when None). Both follow
    ``.to(...)``.
    """

    #: True when the proposal depends on ``context``.
    conditional: bool = False

    #: An empty buffer that carries the sampler's device and dtype.
    _anchor: Tensor

    def __init__(
        self, num_classes: int, *, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.num_classes = check_positive_int("num_classes", num_classes)
        # Follows ``.to(device)`` / ``.double()`` so that samplers without state draw on the right
        # device and score in the layer's dtype.
        self.register_buffer("_anchor", torch.empty(0, device=device, dtype=dtype), persistent=False)

    @property
    def device(self) -> torch.device:
        return self._anchor.device

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of :meth:`log_q`'s results."""
        return self._anchor.dtype

    def sample(
        self, num_samples: int, *, context: Tensor | None = None, generator: torch.Generator | None = None
    ) -> Tensor:
        """Draw ``num_samples`` ids with replacement: (num_samples,) long, or (N, num_samples)
        for a conditional sampler given ``context`` of shape (N,)."""
        raise NotImplementedError

    def log_q(self, ids: Tensor, *, context: Tensor | None = None) -> Tensor:
        """Exact log-probability of each id under one draw, same shape as ``ids``."""
        raise NotImplementedError

    def update(self, target: Tensor, *, context: Tensor | None = None, **kwargs) -> None:
        """Adapt to the targets just seen (no-op for fixed proposals)."""

    def sample_unique(self, num_samples: int, *, generator: torch.Generator | None = None) -> tuple[Tensor, int]:
        """``num_samples`` distinct ids and the number of draws ``T`` it took.

        Draws with replacement until ``num_samples`` distinct ids have appeared and keeps them in
        order of first appearance (as TensorFlow's unique candidate samplers do); ``T`` is the
        position of the last kept id's first appearance. Pass ``T`` to
        :func:`log_expected_count` for the log-Q correction. Unconditional samplers only.
        """
        if self.conditional:
            raise ConfigError(
                f"{type(self).__name__} is conditional: unique (shared) sampling needs an unconditional sampler"
            )
        if num_samples > self.num_classes:
            raise ConfigError(f"cannot draw {num_samples} distinct ids from {self.num_classes} classes")
        draws = self.sample(2 * num_samples, generator=generator)
        while True:
            distinct, inverse = torch.unique(draws, return_inverse=True)
            if distinct.numel() >= num_samples:
                positions = torch.arange(draws.numel(), device=draws.device)
                first = torch.full_like(distinct, draws.numel()).scatter_reduce_(0, inverse, positions, "amin")
                order = first.argsort()[:num_samples]
                return distinct[order], int(first[order[-1]]) + 1
            if draws.numel() >= MAX_UNIQUE_DRAWS:
                raise ConfigError(
                    f"{type(self).__name__} found only {distinct.numel()} distinct ids in {draws.numel()} draws, "
                    f"fewer than num_samples={num_samples}: the proposal gives (almost) no mass to enough classes; "
                    "lower num_samples or sample with replacement (unique=False)"
                )
            draws = torch.cat([draws, self.sample(draws.numel(), generator=generator)])

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}"


def uniform_ids(
    num_classes: int, shape: tuple[int, ...], generator: torch.Generator | None, device: torch.device | str
) -> Tensor:
    """Ids of ``shape`` (int64) uniform in [0, num_classes): ``torch.randint``'s draws, the same
    stream for the same generator state. Drawn by ``random_`` into an empty tensor, as
    :func:`uniform_floats`, because ``torch.compile`` cannot trace ``randint`` with a
    ``generator=`` argument and a size known only at run time."""
    return torch.empty(shape, dtype=torch.long, device=device).random_(num_classes, generator=generator)


def uniform_floats(shape: tuple[int, ...], generator: torch.Generator | None, device: torch.device | str) -> Tensor:
    """float64 numbers of ``shape`` uniform in [0, 1): ``torch.rand``'s draws (the same stream),
    by ``uniform_``, which ``torch.compile`` traces where ``rand(..., generator=)`` fails."""
    return torch.empty(shape, dtype=torch.float64, device=device).uniform_(generator=generator)


def log_expected_count(log_q: Tensor, num_draws: int, *, unique: bool) -> Tensor:
    """Log of the expected number of times each id is in a candidate set built from ``num_draws``
    independent draws from Q (``log_q`` = log Q(id), any shape); the log-Q correction of sampled
    softmax subtracts it from the logits.

    * With replacement (``unique=False``) the count of id ``i`` in ``T`` draws is Binomial(T, q_i),
      so its expectation is ``T q_i``.
    * Without replacement (``unique=True``, the set of distinct ids among ``T`` draws) the count is
      the indicator that ``i`` was drawn at least once: ``P = 1 - (1 - q_i)^T``. This is exact for a
      fixed ``T``; :meth:`Sampler.sample_unique` stops at a random ``T`` (when ``k`` distinct ids
      have appeared) and, like TensorFlow, plugs that ``T`` in.

    The second form is computed as ``log(-expm1(T log1p(-q)))`` so that it stays accurate for
    q as small as 1e-30 (where it equals ``log T + log q``) and for q close to 1.
    """
    if not unique:
        return log_q + math.log(num_draws)
    return torch.log(_drawn_at_least_once(torch.log1p(-torch.exp(log_q)), num_draws))


def _drawn_at_least_once(log_miss: Tensor, num_draws: float) -> Tensor:
    """1 - (1 - q)^T from ``log_miss`` = log(1 - q), accurate for tiny q."""
    return -torch.expm1(num_draws * log_miss)


def inclusion_probabilities(sampler: Sampler, num_samples: int, *, unique: bool) -> Tensor:
    """P(id is in a candidate set) for every id: (V,) float64, from the proposal's marginal Q
    (a conditional sampler's proposal without context). The bench's cost models count the rows a
    step must read by it: a row drawn several times is read once.

    * With replacement (``unique=False``), ``num_samples`` draws: ``1 - (1 - q)^k``.
    * ``unique=True``, k distinct ids drawn as :meth:`Sampler.sample_unique` draws them: the same
      form at the number of draws T at which k distinct ids are expected (they then sum to k).
      T is random in a real draw; fixing it at this value is an approximation, like the plug-in
      of :func:`log_expected_count` (``tests/bench/test_bench_peers_roofline.py`` holds the
      expected union with a batch's targets to the mean of real draws).
    """
    log_q = sampler.log_q(torch.arange(sampler.num_classes, device=sampler.device)).double()
    log_miss = torch.log1p(-log_q.exp())  # log(1 - q): a draw misses the id
    draws = _draws_for_distinct(log_miss, num_samples) if unique else float(num_samples)
    return _drawn_at_least_once(log_miss, draws)


def _draws_for_distinct(log_miss: Tensor, num_distinct: int) -> float:
    """The T at which T draws show ``num_distinct`` distinct ids in expectation, by bisection
    (the expected count, sum of 1 - (1 - q)^T, grows with T and is at most T)."""

    def expected_distinct(draws: float) -> float:
        return float(_drawn_at_least_once(log_miss, draws).sum())

    low, high = float(num_distinct), float(num_distinct)
    while expected_distinct(high) < num_distinct:
        if high >= MAX_UNIQUE_DRAWS:
            raise ConfigError(
                f"{num_distinct} distinct ids are not expected within {MAX_UNIQUE_DRAWS} draws: the proposal "
                "gives (almost) no mass to enough classes"
            )
        low, high = high, 2.0 * high
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if expected_distinct(middle) < num_distinct else (low, middle)
    return high


def required_counts(counts: Sequence[float] | Tensor | None, num_classes: int, owner: str, otherwise: str) -> Tensor:
    """:func:`as_counts` of ``counts``, which ``owner`` cannot do without: None is refused with the
    one message every such layer and sampler gives, naming ``otherwise`` (what to choose instead).

    The library never assumes a frequency law for missing counts: ids need not be sorted by
    frequency (a retrieval model's item ids are not), and a tree or band built from an assumed law
    would fit the wrong words silently. Pass ``counts=zipf_counts(V)`` to ask for Zipf's law over
    the ids' order explicitly.
    """
    if counts is None:
        raise ConfigError(
            f"{owner} needs counts= (the training frequency of each class, ids sorted by descending "
            f"frequency); pass counts, or {otherwise}"
        )
    return as_counts(counts, num_classes, owner)


def zipf_counts(num_classes: int) -> Tensor:
    """Counts proportional to 1 / (rank + 1): Zipf's law over ids sorted by decreasing frequency,
    for the layers that read counts when a corpus's own are not at hand (pass them explicitly)."""
    return 1.0 / torch.arange(1, num_classes + 1, dtype=torch.float64)


def as_counts(counts: Sequence[float] | Tensor, num_classes: int, owner: str) -> Tensor:
    """Validated class frequencies as a float64 tensor of shape (num_classes,)."""
    try:
        tensor = torch.as_tensor(counts, dtype=torch.float64).detach().cpu().reshape(-1).clone()
    except (TypeError, ValueError, RuntimeError) as error:
        raise ConfigError(f"{owner}: counts must be a sequence of numbers, got {type(counts).__name__}") from error
    if tensor.numel() != num_classes:
        raise ConfigError(f"{owner}: counts has {tensor.numel()} entries but num_classes={num_classes}")
    if not torch.isfinite(tensor).all() or (tensor < 0).any():
        raise ConfigError(f"{owner}: counts must be finite and non-negative")
    if tensor.sum() <= 0:
        raise ConfigError(f"{owner}: counts must not all be zero")
    return tensor
