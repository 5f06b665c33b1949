"""The best inner products of each query over every row of a narrow matrix, compiled with numba.

SVD-softmax (:mod:`bigvocab.index.svd`) previews all V logits of each query through a few
columns and keeps the best C. In torch that is a (N, V) product and a top-C: writing and
re-reading N·V floats costs more than the rank-r products themselves (at r = 16, a (256, 65,536)
block took 0.16 s to multiply and 0.13 s to select on a shared core). Here rows are taken in blocks
whose (N, block) scores (one BLAS product) stay in cache, and each query keeps its best C in a
buffer whose worst entry is tracked, so a row that does not beat it costs one comparison: nothing
of size N·V is written.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from bigvocab.kernels.best_slots import worst_slot as worst_slot_of
from bigvocab.kernels.flags import FAST
from bigvocab.kernels.threads import run_in_ranges

#: Rows scored by every query at once (one BLAS product); the (queries, block) scores stay in cache.
_ROW_BLOCK = 1024


@njit(nogil=True, cache=True, fastmath=FAST)
def _best(queries, rows, best_ids, best_scores, worst_slots, lo, hi):
    """For queries lo..hi-1: the ids and scores of their best rows; the buffers arrive filled
    with the first ``keep`` rows' scores and ``worst_slots`` with each buffer's worst slot."""
    num_rows = rows.shape[0]
    keep = best_ids.shape[1]
    mine = queries[lo:hi]
    for start in range(keep, num_rows, _ROW_BLOCK):
        stop = min(num_rows, start + _ROW_BLOCK)
        scores = np.dot(mine, rows[start:stop].T)  # BLAS: (hi - lo, block), in cache
        for q in range(lo, hi):
            worst_slot = worst_slots[q]
            worst = best_scores[q, worst_slot]
            for j in range(stop - start):
                score = scores[q - lo, j]
                if score > worst:
                    best_ids[q, worst_slot] = start + j
                    best_scores[q, worst_slot] = score
                    worst_slot = worst_slot_of(best_scores, q)
                    worst = best_scores[q, worst_slot]
            worst_slots[q] = worst_slot


def best_rows(queries: np.ndarray, rows: np.ndarray, keep: int) -> np.ndarray:
    """queries (N, D) float32, rows (R, D) float32 contiguous, 1 <= keep <= R -> (N, keep) int64
    ids of each query's ``keep`` largest inner products, unordered. Queries are split over
    torch's threads."""
    first = queries @ rows[:keep].T  # (N, keep): the buffers start full
    best_ids = np.tile(np.arange(keep, dtype=np.int64), (queries.shape[0], 1))
    best_scores = np.ascontiguousarray(first, dtype=np.float32)
    worst_slots = best_scores.argmin(1).astype(np.int64)
    arrays = (queries, rows, best_ids, best_scores, worst_slots)
    run_in_ranges(_best, arrays, queries.shape[0], torch.get_num_threads(), work_per_item=rows.shape[0] * rows.shape[1])
    return best_ids
