"""The buffer both top-k scans keep per query (:mod:`bigvocab.kernels.ivf`,
:mod:`bigvocab.kernels.preview`): the ``keep`` best scores seen so far, unsorted, with the slot of
the worst tracked so that a score that does not beat it costs one comparison."""

from __future__ import annotations

from numba import njit

from bigvocab.kernels.flags import FAST


@njit(nogil=True, cache=True, fastmath=FAST)
def worst_slot(best_scores, q):
    """The slot of row ``q``'s lowest score in ``best_scores`` (N, keep)."""
    slot_of_worst = 0
    for slot in range(1, best_scores.shape[1]):
        if best_scores[q, slot] < best_scores[q, slot_of_worst]:
            slot_of_worst = slot
    return slot_of_worst
