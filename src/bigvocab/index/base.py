"""The approximate top-k index of a linear softmax: a cache of its (V, H) weights and bias.

An index proposes candidate ids for each hidden state; :meth:`ApproxIndex.topk` rescores them
exactly against the layer's own weights, so every returned score is the exact logit of its id and
only *which* ids come back is approximate (measured as recall@k by ``bigvocab bench --ann``).
Vijayanarasimhan et al. 2015 ("Deep Networks With Large Output Spaces") use such an index at
test time; they note that training would need it rebuilt after every update, so here it is a
cache: it remembers the version counters of the tensors it was built from, refuses to answer once
they change (:class:`StaleIndexError`), and is rebuilt on request from its :attr:`spec`.
It is not written into checkpoints: building is minutes at most at V = 1M, and the spec is enough
to rebuild it on load (``layer.build_index(**index.spec)``).
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch import Tensor

from bigvocab.errors import BigvocabError, ConfigError
from bigvocab.index.mips import lift_queries, lift_rows
from bigvocab.index.ragged import ragged_topk
from bigvocab.registry import INDEXES, build


class StaleIndexError(BigvocabError, RuntimeError):
    """The weights changed since the index was built."""


def tensor_versions(*tensors: Tensor | None) -> tuple:
    """What identifies the current contents of ``tensors``: storage, in-place version, shape.

    Every in-place update (an optimiser step, ``load_state_dict``, ``.copy_``) bumps ``_version``;
    replacing the tensor (``.double()``, ``.to(...)``, tying) changes the storage. Writes through
    ``.data`` escape the counter (it is a different tensor object) and go unnoticed: reading a
    checksum instead would cost a pass over the V rows, what the index exists to avoid.
    """
    return tuple(None if t is None else (t.data_ptr(), t._version, tuple(t.shape), t.dtype) for t in tensors)


class ApproxIndex:
    """Candidates for the top of ``hidden @ weight.T + bias``, from a structure over the rows.

    Subclasses take ``(rows, **build_options)`` where rows are the (V, H + 2) lifted rows of
    :func:`bigvocab.index.mips.lift_rows` (and ``beta``, the lift's bias scale, if they name it), declare the names of their search-time options in
    :attr:`SEARCH_OPTIONS` (settable later with :meth:`tune`), and write :meth:`_candidates`
    and :meth:`memory_bytes`.
    """

    #: Names of the options that change only the search, not the structure.
    SEARCH_OPTIONS: tuple[str, ...] = ()

    kind: str = ""
    build_seconds: float = float("nan")
    versions: tuple = ()
    build_options: dict[str, Any] = {}
    #: the bias scale of the lift (see :mod:`bigvocab.index.mips`).
    beta: float = 1.0

    # ------------------------------------------------------------------ public
    def tune(self, **search_options: Any) -> ApproxIndex:
        """Set search-time options (e.g. ``nprobe``) without rebuilding; returns self."""
        for name, value in search_options.items():
            if name not in self.SEARCH_OPTIONS:
                raise ConfigError(
                    f"index kind {self.kind!r} has no search option {name!r} "
                    f"(search options: {', '.join(self.SEARCH_OPTIONS) or 'none'})"
                )
            self._set_search_option(name, value)
        return self

    def search_options(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.SEARCH_OPTIONS}

    @property
    def spec(self) -> dict[str, Any]:
        """``kind`` and every option: ``build_index(weight, bias, **spec)`` builds it again."""
        return {"kind": self.kind, **self.build_options, **self.search_options()}

    def is_stale(self, weight: Tensor, bias: Tensor | None) -> bool:
        return tensor_versions(weight, bias) != self.versions

    def check_fresh(self, weight: Tensor, bias: Tensor | None) -> None:
        if self.is_stale(weight, bias):
            raise StaleIndexError(
                f"the {self.kind!r} index was built from weights that have changed since; "
                f"rebuild it with layer.build_index(**index.spec)"
            )

    def topk(self, hidden: Tensor, weight: Tensor, bias: Tensor | None, k: int) -> tuple[Tensor, Tensor]:
        """hidden (N, H) -> (exact logits (N, k), ids (N, k)), best first, in hidden's dtype.

        The candidates are scored exactly (O(N·C·H) for C candidates a query); a query given
        fewer than k candidates is answered by the exact chunked top-k instead, so every row
        holds k distinct ids.
        """
        with torch.no_grad():
            rows, ids = self._candidates(lift_queries(hidden, self.beta), k)
            # Pairs in blocks, so that the gathered (pairs, H) rows stay memory-bounded.
            block = max(1, (1 << 22) // hidden.shape[1])
            scores = (
                torch.cat(
                    [
                        (hidden[r] * weight[i].to(hidden.dtype)).sum(1)
                        for r, i in zip(rows.split(block), ids.split(block))
                    ]
                )
                if rows.numel()
                else hidden.new_empty(0)
            )
            if bias is not None:
                scores = scores + bias[ids].to(hidden.dtype)
            values, best_ids, counts = ragged_topk(rows, ids, scores, hidden.shape[0], k)
            short = (counts < k).nonzero().flatten()
            # Rows of (rows, V) logits at a time, so a crowd of short queries stays memory-bounded.
            per_block = max(1, (1 << 24) // weight.shape[0])
            for block in short.split(per_block):
                exact = hidden[block] @ weight.t().to(hidden.dtype)
                if bias is not None:
                    exact = exact + bias.to(hidden.dtype)
                values[block], best_ids[block] = exact.topk(k, dim=1)
            self.last_fallbacks = int(short.numel())
        return values, best_ids

    def describe(self) -> dict[str, Any]:
        """Kind, options, build time (s) and bytes held, for reports."""
        return {**self.spec, "build_seconds": self.build_seconds, "memory_bytes": self.memory_bytes()}

    # ------------------------------------------------------------------ for subclasses
    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """Lifted queries (N, H + 2) -> distinct (query row (P,), class id (P,)) pairs, for a
        top-``k`` request."""
        raise NotImplementedError

    def memory_bytes(self) -> int:
        """Bytes the index holds beyond the layer's own weights."""
        raise NotImplementedError

    def _set_search_option(self, name: str, value: Any) -> None:
        setattr(self, name, value)


def build_index(weight: Tensor, bias: Tensor | None = None, *, kind: str, **options: Any) -> ApproxIndex:
    """An index of kind ``kind`` (see :func:`list_index_kinds`) over weight (V, H), bias (V,).

    Options are the kind's build and search options; unknown ones get a ConfigError naming the
    valid ones. The returned index carries ``build_seconds`` (wall time of lifting the rows and
    building) and the tensor versions it was built from.
    """
    if weight.dim() != 2:
        raise ConfigError(f"weight must be (V, H), got shape {tuple(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ConfigError(f"bias must be (V,) = ({weight.shape[0]},), got shape {tuple(bias.shape)}")
    start = time.perf_counter()
    rows, beta = lift_rows(weight, bias)
    # beta goes to the kinds that name it, to lift hidden states of their own (screening's contexts).
    index = build(INDEXES, kind, (rows,), {"beta": beta}, options)
    index.beta = beta
    index.build_seconds = time.perf_counter() - start
    index.kind = kind
    index.versions = tensor_versions(weight, bias)
    return index


def list_index_kinds() -> list[str]:
    return INDEXES.names()
