"""``lsh`` -- sign-random-projection hashing (Charikar 2002) in several tables, multi-probe.

Vijayanarasimhan et al. 2015 find the top of a softmax layer by hashing its rows. Here each of
``tables`` tables hashes a lifted row x (see :mod:`bigvocab.index.mips`: equal norms, so a small
angle to the query means a high score) to the ``bits`` signs of ``bits`` Gaussian projections.
Two vectors at angle θ share a sign with probability 1 - θ/π, so a row near the query shares its
whole bucket with probability (1 - θ/π)^bits, and ``tables`` independent tables raise the chance
of meeting it at least once. A query collects the rows of its own bucket in every table and, with
``probes`` > 0, of the ``probes`` buckets one bit away whose bits it was least sure of (the
projections nearest zero; multi-probe LSH, Lv et al. 2007), then the candidates are rescored
exactly. More bits: fewer, better candidates; more tables or probes: higher recall, more work.
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.index.base import ApproxIndex
from bigvocab.registry import INDEXES
from bigvocab.validation import check_nonnegative_int, check_positive_int

#: Rows hashed at a time while building, to bound the (rows, tables·bits) projections.
_BUILD_BLOCK = 1 << 16


@INDEXES.register("lsh")
class SignProjectionLSH(ApproxIndex):
    """Multi-table sign-random-projection LSH over the lifted rows.

    Args:
        rows: (V, D) lifted rows.
        bits: hash length per table, 1..62.
        tables: number of independent tables.
        probes: extra buckets looked up per table (search option).
        seed: of the random projections.
    """

    SEARCH_OPTIONS = ("probes",)
    probes: int

    def __init__(self, rows: Tensor, *, bits: int = 16, tables: int = 8, probes: int = 2, seed: int = 0) -> None:
        check_positive_int("bits", bits)
        if bits > 62:
            raise ConfigError(f"bits must be at most 62 (codes are int64), got {bits}")
        check_positive_int("tables", tables)
        self.build_options = {"bits": bits, "tables": tables, "seed": seed}
        self.num_rows = rows.shape[0]
        generator = torch.Generator().manual_seed(seed)
        self.projections = torch.randn(rows.shape[1], tables * bits, generator=generator)
        self._powers = 2 ** torch.arange(bits, dtype=torch.long)
        codes = torch.cat([self._codes(block)[0] for block in rows.split(_BUILD_BLOCK)])  # (V, tables)
        sorted_codes, order = codes.t().sort(dim=1)  # (tables, V) each
        self.sorted_codes, self.order = sorted_codes.contiguous(), order.int().contiguous()
        self._set_search_option("probes", probes)

    def _set_search_option(self, name: str, value: int) -> None:
        setattr(self, name, min(check_nonnegative_int(name, value), self.build_options["bits"]))

    def _codes(self, vectors: Tensor) -> tuple[Tensor, Tensor]:
        """(n, D) -> bucket codes (n, tables) and the projections (n, tables, bits)."""
        projected = (vectors @ self.projections).reshape(vectors.shape[0], self.build_options["tables"], -1)
        return ((projected > 0).long() * self._powers).sum(2), projected

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        codes, projected = self._codes(queries)
        probes = [codes]
        if self.probes:
            unsure = projected.abs().topk(self.probes, dim=2, largest=False).indices  # (N, tables, probes)
            probes.extend((codes ^ self._powers[unsure[..., p]]) for p in range(self.probes))
        wanted = torch.stack(probes, dim=2)  # (N, tables, 1 + probes)
        num_queries, tables, per_table = wanted.shape
        query_rows, ids = [], []
        for table in range(tables):
            flat = wanted[:, table].reshape(-1).contiguous()
            low = torch.searchsorted(self.sorted_codes[table], flat, side="left")
            high = torch.searchsorted(self.sorted_codes[table], flat, side="right")
            sizes = high - low
            total = int(sizes.sum())
            starts = torch.cumsum(sizes, 0) - sizes
            position = torch.arange(total) - torch.repeat_interleave(starts - low, sizes)
            ids.append(self.order[table][position].long())
            query_rows.append(torch.repeat_interleave(torch.arange(num_queries).repeat_interleave(per_table), sizes))
        # A row met in several tables or probes is rescored once.
        pairs = torch.unique(torch.cat(query_rows) * self.num_rows + torch.cat(ids))
        return pairs // self.num_rows, pairs % self.num_rows

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.projections, self.sorted_codes, self.order))
