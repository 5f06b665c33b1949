"""The scan of an inverted file: the best rows of each query's cells, compiled with numba.

An inverted file (Jégou et al. 2011; :mod:`bigvocab.index.ivf`) keeps its rows grouped by cell,
each cell's rows contiguous. A query scans the rows of the few cells it probes and keeps the
``C`` best inner products: a (N, C) answer, without ever writing the (N, scanned rows) scores
that a gather-and-matmul in torch would. The best C are kept in a small unsorted buffer whose
worst entry is tracked, so a row that does not beat it costs one comparison after its dot product
(most rows, once the buffer fills).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from bigvocab.kernels.best_slots import worst_slot as worst_slot_of
from bigvocab.kernels.flags import FAST
from bigvocab.kernels.threads import run_in_ranges


@njit(nogil=True, cache=True, fastmath=FAST)
def _scan(queries, rows, offsets, cells, best_positions, best_scores, lo, hi):
    """For queries lo..hi-1: the positions (into ``rows``) and scores of the best rows of the
    cells ``cells[q]``; unfilled slots keep position -1 and score -inf."""
    dim = rows.shape[1]
    keep = best_positions.shape[1]
    for q in range(lo, hi):
        worst_slot = 0
        worst = -np.inf
        filled = 0
        for probe in range(cells.shape[1]):
            cell = cells[q, probe]
            for position in range(offsets[cell], offsets[cell + 1]):
                score = np.float32(0.0)
                for d in range(dim):
                    score += queries[q, d] * rows[position, d]
                if filled < keep:
                    best_positions[q, filled] = position
                    best_scores[q, filled] = score
                    filled += 1
                    if filled == keep:
                        worst_slot = worst_slot_of(best_scores, q)
                        worst = best_scores[q, worst_slot]
                elif score > worst:
                    best_positions[q, worst_slot] = position
                    best_scores[q, worst_slot] = score
                    worst_slot = worst_slot_of(best_scores, q)
                    worst = best_scores[q, worst_slot]


def scan_cells(
    queries: np.ndarray, rows: np.ndarray, offsets: np.ndarray, cells: np.ndarray, keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """queries (N, D) float32, rows (R, D) float32 grouped by cell, offsets (cells + 1,) int64
    (cell c holds rows offsets[c]..offsets[c + 1] - 1), cells (N, P) int64 the cells each query
    probes -> (positions (N, keep) int64, scores (N, keep) float32), unordered, -1 / -inf where
    the probed cells held fewer than ``keep`` rows. Queries are split over torch's threads."""
    num_queries = queries.shape[0]
    positions = np.full((num_queries, keep), -1, dtype=np.int64)
    scores = np.full((num_queries, keep), -np.inf, dtype=np.float32)
    sizes = offsets[cells + 1] - offsets[cells]
    work = np.concatenate([[0], np.cumsum(sizes.sum(1))]).astype(np.int64)
    arrays = (queries, rows, offsets, cells, positions, scores)
    run_in_ranges(_scan, arrays, num_queries, torch.get_num_threads(), work=work, work_per_item=rows.shape[1])
    return positions, scores
