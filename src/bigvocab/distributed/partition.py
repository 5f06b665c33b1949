"""Which rank owns which classes: contiguous vocabulary ranges balanced by row count.

Each rank of a vocabulary-parallel layer holds the rows ``[start, stop)`` of the (V, H) weight and
the matching bias. The ranges are balanced by **row count** (sizes differ by at most one), not by
frequency mass, because what a rank pays for is proportional to its rows: the weights, their
gradient and optimiser state (memory), and for the exact softmax the N x rows logits of every step
(time). Balancing frequency mass instead would give rank 0 a handful of frequent words and the last
rank almost all of the rows (Zipf), so the largest shard -- the one that decides whether the layer
fits -- would barely shrink with P. The cost that mass would balance, scoring the sampled
candidates a rank owns, is O(k H) per step and negligible beside the rest.

Contiguous ranges keep a class's owner a comparison (``start <= id < stop``) and let each rank
stream its own rows in chunks exactly as the one-process layer streams all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from bigvocab.errors import ConfigError
from bigvocab.validation import check_positive_int


@dataclass(frozen=True)
class VocabPartition:
    """Contiguous class ranges: rank r owns ``[boundaries[r], boundaries[r + 1])``.

    ``boundaries`` has P + 1 increasing entries from 0 to V; every range is non-empty.
    """

    boundaries: tuple[int, ...]

    def __post_init__(self) -> None:
        bounds = self.boundaries
        if len(bounds) < 2 or bounds[0] != 0 or any(b <= a for a, b in zip(bounds, bounds[1:])):
            raise ConfigError(
                f"partition boundaries must rise strictly from 0 to the vocabulary size, got {list(bounds)}"
            )

    @classmethod
    def even(cls, num_classes: int, world_size: int) -> VocabPartition:
        """P ranges of V // P or V // P + 1 rows (the first V % P ranks take the extra row), so V
        need not be divisible by P."""
        check_positive_int("num_classes", num_classes)
        check_positive_int("world_size", world_size)
        if world_size > num_classes:
            raise ConfigError(
                f"cannot split {num_classes} classes over {world_size} ranks: every rank needs at least one class"
            )
        base, extra = divmod(num_classes, world_size)
        bounds = [0]
        for rank in range(world_size):
            bounds.append(bounds[-1] + base + (1 if rank < extra else 0))
        return cls(tuple(bounds))

    @property
    def num_classes(self) -> int:
        return self.boundaries[-1]

    @property
    def world_size(self) -> int:
        return len(self.boundaries) - 1

    @property
    def sizes(self) -> list[int]:
        return [b - a for a, b in zip(self.boundaries, self.boundaries[1:])]

    def range(self, rank: int) -> tuple[int, int]:
        """``(start, stop)`` of the classes that ``rank`` owns."""
        if not 0 <= rank < self.world_size:
            raise ConfigError(f"rank {rank} is outside this partition's {self.world_size} ranks")
        return self.boundaries[rank], self.boundaries[rank + 1]
