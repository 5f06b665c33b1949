"""word2vec's per-example SGD updates, compiled with numba (``nogil``, so threads run them at once).

The arrays are numpy views of the bigvocab model's tensors (no copies):

* ``syn0`` (V, H): the input embedding (``model.embedding.weight``);
* ``syn1`` (R, H): the output layer's weight -- ``neg``: one row per word (word2vec's ``syn1neg``);
  ``hsm``: one row per binary tree node (word2vec's ``syn1``).

Every update is one SGD step of size ``alpha`` on one example's loss, taken in order, as in
word2vec.c (Mikolov et al. 2013) and gensim: the output rows move first from the old input
vector, and the input vector then moves by the error accumulated against the old output rows.
With negative sampling all of an example's dot products are taken before any row moves, then
each row is read once for both updates; along a tree path each node's row moves right after its
dot product (:func:`output_steps`). Both give one SGD step: a path's nodes are distinct.
With the torch models' losses (``bigvocab.models.word2vec``) that is ``param -= alpha * grad``
for one example whose output rows are distinct (tests/word2vec/test_kernels.py), up to the
way word2vec.c and gensim read the logistic function from a table, which leans every error
by up to about 0.0075 (towards gensim's label 1), and their skip of saturated outputs (see :func:`step_size`).

* negative sampling, label 1 for the target and 0 for k negatives drawn from the noise
  distribution (a negative equal to the target is skipped, as word2vec does):
  ``g = alpha (label - sigmoid(l1 . u))``.
* hierarchical softmax along the target's Huffman path, ``label`` = the child position taken
  (``hsm``'s convention: position 1 has probability sigmoid(h . u)):
  ``g = alpha (label - sigmoid(l1 . u))``.

Random numbers come from word2vec.c's linear congruential generator, one state per thread, so
a single-thread run is reproducible for a seed.

With several threads and a tree, each thread moves its own copies of the rows nearest the root
and merges them into the shared table every SYNC_EVERY examples and at the end of each chunk
(:func:`sync_staged`); one thread moves the shared rows themselves.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigvocab.kernels.flags import FAST

_LCG_A = np.uint64(25214903917)
_LCG_C = np.uint64(11)
_SHIFT = np.uint64(16)
_INV_2_48 = 1.0 / float(1 << 48)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def next_uniform(rng: np.ndarray) -> float:
    """A uniform draw in [0, 1) from word2vec.c's LCG (its top 48 bits); advances ``rng[0]``."""
    rng[0] = rng[0] * _LCG_A + _LCG_C
    return float(rng[0] >> _SHIFT) * _INV_2_48


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def draw_noise(accept: np.ndarray, alias: np.ndarray, rng: np.ndarray) -> int:
    """One id from the alias table (Walker 1977) with one draw: its integer part times V picks
    the bucket, its fractional part (still 48 - log2 V random bits) is the biased coin."""
    scaled = next_uniform(rng) * accept.shape[0]
    bucket = int(scaled)
    if scaled - bucket < accept[bucket]:
        return bucket
    return alias[bucket]


# Rows are addressed as (matrix, row) rather than as views ``m[row]``: a view costs a reference
# count update, and all threads would update the same counter.
@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def dot(a: np.ndarray, i: int, b: np.ndarray, j: int) -> float:
    """a[i] . b[j]."""
    total = np.float32(0.0)
    for k in range(a.shape[1]):
        total += a[i, k] * b[j, k]
    return total


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def axpy(alpha: float, x: np.ndarray, i: int, y: np.ndarray, j: int) -> None:
    """y[j] += alpha x[i]."""
    a = np.float32(alpha)
    for k in range(x.shape[1]):
        y[j, k] += a * x[i, k]


#: The logistic function is read as word2vec.c and gensim read it: from EXP_TABLE_SIZE values of
#: sigmoid(x) at x = -MAX_EXP + 2 MAX_EXP i / EXP_TABLE_SIZE, at index int((f + MAX_EXP) * TABLE_SCALE),
#: without interpolation; an output with |f| >= MAX_EXP is not updated. Their scale is written
#: ``EXP_TABLE_SIZE / MAX_EXP / 2`` between C integers, so it is 83, not 83.3: the value read is
#: sigmoid(x) at x about 0.996 f - 0.03, every error label - sigmoid leans towards label 1 (by 0.0075
#: near f = 0), and the dot products settle higher. Reading sigmoid(f) exactly instead left skip-gram + negative
#: sampling measurably behind gensim (docs/design/word2vec-sigmoid-table.md).
MAX_EXP = 6.0
EXP_TABLE_SIZE = 1000
TABLE_SCALE = float(EXP_TABLE_SIZE // int(MAX_EXP) // 2)
SIGMOID_TABLE = (1.0 / (1.0 + np.exp(-(np.arange(EXP_TABLE_SIZE) / EXP_TABLE_SIZE * 2 - 1) * MAX_EXP))).astype(
    np.float32
)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def table_sigmoid(f: float) -> float:
    """word2vec.c's sigmoid(f) for -MAX_EXP < f < MAX_EXP (the table's read, see SIGMOID_TABLE)."""
    return SIGMOID_TABLE[int((f + MAX_EXP) * TABLE_SCALE)]


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def step_size(f: float, label: float, alpha: float, hs: bool) -> float:
    """``alpha (label - sigmoid(f))`` with word2vec's table, or 0 for |f| >= MAX_EXP (gensim skips
    both sides; word2vec.c's negative sampling takes the full step on the wrong one).

    A tree node's label is bigvocab's: position 1 has probability sigmoid(h . u), where gensim's
    code 1 has 1 - sigmoid(h . u); with the same codes bigvocab's node vector is gensim's negated,
    so the table is read at -f (``1 - table(-f)``) for the step to be gensim's, table and all."""
    if f >= MAX_EXP or f <= -MAX_EXP:
        return 0.0
    if hs:
        return (label - 1.0 + table_sigmoid(-f)) * alpha
    return (label - table_sigmoid(f)) * alpha


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def log_loss(f: float, label: float) -> float:
    """``-log sigmoid(f)`` for label 1, ``-log sigmoid(-f)`` for label 0: one binary decision's
    negative log-likelihood, computed exactly (softplus), as the torch models' losses are."""
    x = -f if label > 0.5 else f
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def move_row(l1, li, table, row, g, work) -> None:
    """``work[0] += g table[row]`` with the row's old value, then ``table[row] += g l1[li]``: one
    pass over the row, which is read once for both."""
    for k in range(table.shape[1]):
        old = table[row, k]
        work[0, k] += g * old
        table[row, k] = old + g * l1[li, k]


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def update_rows(l1, li, syn1, rows, steps, n, work) -> None:
    """:func:`move_row` for each j < n: ``syn1[rows[j]]`` by ``steps[j]``."""
    for j in range(n):
        g = np.float32(steps[j])
        if g != 0.0:
            move_row(l1, li, syn1, rows[j], g, work)


@njit(nogil=True, cache=True, fastmath=FAST)
def load_staged(syn1, staged, local, base) -> None:
    """This thread's copies ``local`` and ``base`` of the shared rows ``syn1[staged]``."""
    for s in range(staged.shape[0]):
        for k in range(syn1.shape[1]):
            local[s, k] = syn1[staged[s], k]
            base[s, k] = local[s, k]


@njit(nogil=True, cache=True, fastmath=FAST)
def sync_staged(syn1, staged, local, base) -> None:
    """Adds what this thread moved its copies of the staged rows by since the last sync to the
    shared rows, and takes the shared rows (with the other threads' moves) as its new copies.

    Every tree path starts at the root, so with Hogwild threads the top nodes' rows changed hands
    between the cores on every example, and that traffic, not the arithmetic, set the pace: sg +
    hs trained no faster on two threads than on one. Each thread therefore moves its own copy of
    the rows near the root and merges it every SYNC_EVERY examples: it sees its own updates at
    once and the other threads' a few examples late (a Hogwild thread sees them late too, by as
    long as the cache line takes to arrive). Two threads that merge the same row at the same
    moment may lose one's update to it, as Hogwild threads may lose any update."""
    for s in range(staged.shape[0]):
        row = staged[s]
        for k in range(syn1.shape[1]):
            value = syn1[row, k] + (local[s, k] - base[s, k])
            syn1[row, k] = value
            local[s, k] = value
            base[s, k] = value


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def output_steps(
    l1,
    li,
    syn1,
    target,
    hs,
    path_offsets,
    path_rows,
    path_codes,
    negatives,
    alpha,
    work,
    rows,
    steps,
    staged_depth,
    slot_of,
    local,
    loss,
) -> None:
    """The output side of one example; ``work`` (1, H) must start at zero, ``rows``/``steps`` are
    scratch of at least k + 1 (negative sampling). The first ``staged_depth`` nodes of a tree path
    move this thread's copies ``local[slot_of[row]]`` instead of their shared rows
    (:func:`sync_staged`; 0: none).

    Negative sampling: the target (label 1), then the negatives (label 0; one equal to the target
    is skipped); all the dot products are taken first, then the rows move (:func:`update_rows`):
    the dot products do not wait for each other's updates, and each row is read once more, not
    twice. Hierarchical softmax: every decision on the target's tree path, root first, each node's
    row moved right after its dot product, as word2vec.c does. A path's nodes are distinct, so
    the result is the same as dots first; but every example's path starts at the root, and with
    Hogwild threads a row read in one pass and written in a later one changes hands between the
    cores twice: dots first made sg + hs slower on two threads than on one (0.6x
    gensim's words/s on two threads, 0.85x this way; on one thread 1.24x, 1.13x this way;
    ``docs/design/word2vec-threads.md``).

    ``loss`` is this thread's float64 tally of the example's loss (:func:`log_loss`), or an empty
    array when no loss is wanted: the check costs a length read, not a flag in every signature."""
    tally = loss.shape[0] > 0
    if hs:
        start, end = path_offsets[target], path_offsets[target + 1]
        split = min(end, start + staged_depth)
        for d in range(start, split):
            slot = slot_of[path_rows[d]]
            f = dot(l1, li, local, slot)
            if tally:
                loss[0] += log_loss(f, float(path_codes[d]))
            g = step_size(f, float(path_codes[d]), alpha, True)
            if g != 0.0:
                move_row(l1, li, local, slot, np.float32(g), work)
        for d in range(split, end):
            f = dot(l1, li, syn1, path_rows[d])
            if tally:
                loss[0] += log_loss(f, float(path_codes[d]))
            g = step_size(f, float(path_codes[d]), alpha, True)
            if g != 0.0:
                move_row(l1, li, syn1, path_rows[d], np.float32(g), work)
        return
    rows[0] = target
    f = dot(l1, li, syn1, target)
    if tally:
        loss[0] += log_loss(f, 1.0)
    steps[0] = step_size(f, 1.0, alpha, False)
    n = 1
    for j in range(negatives.shape[0]):
        if negatives[j] != target:
            rows[n] = negatives[j]
            f = dot(l1, li, syn1, negatives[j])
            if tally:
                loss[0] += log_loss(f, 0.0)
            steps[n] = step_size(f, 0.0, alpha, False)
            n += 1
    update_rows(l1, li, syn1, rows, steps, n, work)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def draw_negatives(accept, alias, rng, out) -> None:
    for j in range(out.shape[0]):
        out[j] = draw_noise(accept, alias, rng)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def sg_pair(
    syn0,
    syn1,
    source,
    target,
    hs,
    path_offsets,
    path_rows,
    path_codes,
    negatives,
    alpha,
    work,
    rows,
    steps,
    staged_depth,
    slot_of,
    local,
    lockf,
    loss,
) -> None:
    """Skip-gram on one pair: ``syn0[source]`` predicts ``target``; ``work`` is (1, H) scratch,
    ``rows``/``steps`` as in :func:`output_steps`. The input row moves by ``lockf[source]`` times
    its step (gensim's ``vectors_lockf``: 0 freezes a word's vector); ``loss`` as in
    :func:`output_steps`."""
    for k in range(work.shape[1]):
        work[0, k] = 0.0
    output_steps(
        syn0,
        source,
        syn1,
        target,
        hs,
        path_offsets,
        path_rows,
        path_codes,
        negatives,
        alpha,
        work,
        rows,
        steps,
        staged_depth,
        slot_of,
        local,
        loss,
    )
    axpy(lockf[source], work, 0, syn0, source)


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def cbow_window(
    syn0,
    syn1,
    context,
    count,
    target,
    cbow_mean,
    hs,
    path_offsets,
    path_rows,
    path_codes,
    negatives,
    alpha,
    neu1,
    work,
    rows,
    steps,
    staged_depth,
    slot_of,
    local,
    lockf,
    loss,
) -> None:
    """CBOW on one window: the mean (or sum) of ``syn0[context[:count]]`` predicts ``target``.

    Every context word receives the whole error of the mean (gensim's ``cbow_mean=1``) or
    1/count of the error of the sum (``cbow_mean=0``), as word2vec.c and gensim do, times its
    ``lockf`` (see :func:`sg_pair`). ``neu1`` and ``work`` are (1, H) scratch, ``rows``/``steps``
    and ``loss`` as in :func:`output_steps`.
    """
    neu1[0, :] = 0.0
    for c in range(count):
        axpy(1.0, syn0, context[c], neu1, 0)
    scale = 1.0 / count
    if cbow_mean:
        for k in range(neu1.shape[1]):
            neu1[0, k] *= scale
    work[0, :] = 0.0
    output_steps(
        neu1,
        0,
        syn1,
        target,
        hs,
        path_offsets,
        path_rows,
        path_codes,
        negatives,
        alpha,
        work,
        rows,
        steps,
        staged_depth,
        slot_of,
        local,
        loss,
    )
    share = 1.0 if cbow_mean else scale
    for c in range(count):
        axpy(share * lockf[context[c]], work, 0, syn0, context[c])


@njit(nogil=True, cache=True, fastmath=FAST, inline="always")
def sg_window_shared(syn0, syn1, context, count, target, negatives, alpha, grads, dots, lockf, loss) -> None:
    """HogBatch (Ji et al. 2016) on one window: the ``count`` context words all predict
    ``target`` against ONE negative set, so the (count, k + 1) dot products form one small matrix
    product and every update is computed from the window's old values before any is applied.

    ``grads`` (>= count, H) and ``dots`` (>= count, k + 1) are scratch; ``lockf`` and ``loss`` as
    in :func:`sg_pair`.
    """
    k = negatives.shape[0]
    tally = loss.shape[0] > 0
    for c in range(count):
        f = dot(syn0, context[c], syn1, target)
        if tally:
            loss[0] += log_loss(f, 1.0)
        dots[c, 0] = step_size(f, 1.0, alpha, False)
        for j in range(k):
            if negatives[j] == target:
                dots[c, j + 1] = 0.0
            else:
                f = dot(syn0, context[c], syn1, negatives[j])
                if tally:
                    loss[0] += log_loss(f, 0.0)
                dots[c, j + 1] = step_size(f, 0.0, alpha, False)
    for c in range(count):
        grads[c, :] = 0.0
        axpy(dots[c, 0], syn1, target, grads, c)
        for j in range(k):
            axpy(dots[c, j + 1], syn1, negatives[j], grads, c)
    for c in range(count):
        axpy(dots[c, 0], syn0, context[c], syn1, target)
        for j in range(k):
            axpy(dots[c, j + 1], syn0, context[c], syn1, negatives[j])
    for c in range(count):
        axpy(lockf[context[c]], grads, c, syn0, context[c])


#: Examples (skip-gram pairs, CBOW windows) between two merges of a thread's staged rows
#: (:func:`sync_staged`).
SYNC_EVERY = 64

#: word2vec.c's MAX_SENTENCE_LENGTH (gensim's too): longer sentences are cut into pieces this long.
MAX_SENTENCE = 10000


@njit(nogil=True, cache=True, fastmath=FAST)
def train_sentence(
    syn0,
    syn1,
    sentence,
    n,
    sg,
    hs,
    shared,
    cbow_mean,
    window,
    shrink,
    accept,
    alias,
    path_offsets,
    path_rows,
    path_codes,
    alpha,
    rng,
    context,
    negatives,
    neu1,
    work,
    rows,
    steps,
    grads,
    dots,
    staged_depth,
    slot_of,
    staged,
    local,
    base,
    since,
    lockf,
    loss,
) -> None:
    """Every centre of ``sentence[:n]`` in order, with word2vec's reduced window: a radius drawn
    uniformly in 1..window (``shrink``) or always ``window``; windows stop at the sentence ends.
    Skip-gram takes the pairs as word2vec.c and gensim do: each context word's input vector
    predicts the centre. Staged rows are merged once SYNC_EVERY examples (pairs, CBOW windows)
    have passed since the last merge, which ``since[0]`` counts (:func:`sync_staged`)."""
    for i in range(n):
        if staged_depth > 0 and since[0] >= SYNC_EVERY:
            sync_staged(syn1, staged, local, base)
            since[0] = 0
        radius = window - int(next_uniform(rng) * window) if shrink else window
        lo = max(0, i - radius)
        hi = min(n, i + radius + 1)
        count = 0
        for j in range(lo, hi):
            if j != i:
                context[count] = sentence[j]
                count += 1
        if count == 0:
            continue
        centre = sentence[i]
        since[0] += count if sg else 1
        if sg and shared and not hs:
            draw_negatives(accept, alias, rng, negatives)
            sg_window_shared(syn0, syn1, context, count, centre, negatives, alpha, grads, dots, lockf, loss)
        elif sg:
            for c in range(count):
                if not hs:
                    draw_negatives(accept, alias, rng, negatives)
                sg_pair(
                    syn0,
                    syn1,
                    context[c],
                    centre,
                    hs,
                    path_offsets,
                    path_rows,
                    path_codes,
                    negatives,
                    alpha,
                    work,
                    rows,
                    steps,
                    staged_depth,
                    slot_of,
                    local,
                    lockf,
                    loss,
                )
        else:
            if not hs:
                draw_negatives(accept, alias, rng, negatives)
            cbow_window(
                syn0,
                syn1,
                context,
                count,
                centre,
                cbow_mean,
                hs,
                path_offsets,
                path_rows,
                path_codes,
                negatives,
                alpha,
                neu1,
                work,
                rows,
                steps,
                staged_depth,
                slot_of,
                local,
                lockf,
                loss,
            )


@njit(nogil=True, cache=True, fastmath=FAST)
def train_chunk(
    stream,
    start,
    end,
    keep_prob,
    syn0,
    syn1,
    sg,
    hs,
    shared,
    cbow_mean,
    window,
    shrink,
    accept,
    alias,
    path_offsets,
    path_rows,
    path_codes,
    alpha,
    rng,
    sentence,
    context,
    negatives,
    neu1,
    work,
    rows,
    steps,
    grads,
    dots,
    staged_depth,
    slot_of,
    staged,
    local,
    base,
    since,
    lockf,
    loss,
):
    """Train on the sentences of ``stream[start:end]`` (word ids, -1 after each sentence; a
    sentence cut by ``end`` or longer than MAX_SENTENCE is trained as pieces). Frequent words are
    dropped first, each with probability 1 - ``keep_prob[w]`` (Mikolov et al. 2013), so windows
    reach over them; ``lockf`` (V,) scales each word's input-vector steps and ``loss`` tallies the
    loss (:func:`sg_pair`). Returns (words read, words kept by the subsampling, sentences ended).
    This thread's copies of the staged rows (:func:`sync_staged`) are taken first and merged
    last, so the shared table holds every update once the chunk is done."""
    load_staged(syn1, staged, local, base)
    since[0] = 0
    pos = start
    read = 0
    kept = 0
    sentences = 0
    while pos < end:
        n = 0
        length = 0
        while pos < end and stream[pos] >= 0 and length < MAX_SENTENCE:
            w = stream[pos]
            pos += 1
            length += 1
            if keep_prob[w] >= 1.0 or next_uniform(rng) < keep_prob[w]:
                sentence[n] = w
                n += 1
        if pos < end and stream[pos] < 0:
            pos += 1
            sentences += 1
        read += length
        kept += n
        train_sentence(
            syn0,
            syn1,
            sentence,
            n,
            sg,
            hs,
            shared,
            cbow_mean,
            window,
            shrink,
            accept,
            alias,
            path_offsets,
            path_rows,
            path_codes,
            alpha,
            rng,
            context,
            negatives,
            neu1,
            work,
            rows,
            steps,
            grads,
            dots,
            staged_depth,
            slot_of,
            staged,
            local,
            base,
            since,
            lockf,
            loss,
        )
    sync_staged(syn1, staged, local, base)
    return read, kept, sentences
