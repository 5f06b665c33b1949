"""Small pure functions that the output layers compose.

* :func:`gather_rows` -- rows of a parameter with a *sparse* gradient (only the touched rows),
  which is what lets sampled and tree-structured layers train in time independent of V.
* :func:`row_pair_dots` -- scores of (example, row) pairs by the compiled pair kernel, the rows
  gathered sparsely or, under a fused optimiser, updated in the backward's one pass.
* :func:`pairs_compiled` -- whether the compiled pair kernel scores (example, row) pairs here.
* :func:`distinct_ids` -- ``torch.unique`` with inverse for class ids, by a bitmap or marks rather than a sort.
* :func:`chunked_logsumexp` -- log Z and the target logit of a linear softmax computed over
  vocabulary chunks with a running log-sum-exp and a hand-written backward, so the (N, V) logits
  never exist at once.
* :func:`chunked_topk` -- exact top-k of a linear softmax, chunk by chunk.
* :func:`fill_padding` -- a multi-label target's -1 padding replaced by the row's first positive.
"""

from __future__ import annotations

import torch
from torch import Tensor

from bigvocab.outputs.fused.pairs import fused_pair_dots
from bigvocab.outputs.fused.rows import fused_gather

#: Chunks hold at most this many logits (64 MiB in float32) unless the caller says otherwise.
DEFAULT_CHUNK_ELEMENTS = 1 << 24

#: The default budget on a CUDA device (1 GiB in float32). It lets the row-blocked pass (three
#: products, :data:`MIN_ROW_BLOCK` rows or more at once) run up to V = 2M at N = 1024, where 64 MiB
#: forces vocabulary chunks (four products): on a GPU the step at N x H x V = 1024 x 256 x 1M
#: went from 68.3 to 51.5 ms (``docs/design/full-softmax-blocks.md``). On the CPU the larger budget
#: does not pay: row blocks of 512 MiB ran 28.2 s a step there against 27.2 s for the class-major
#: chunks (``docs/design/full-softmax-blocks.md``).
CUDA_CHUNK_ELEMENTS = 1 << 28

#: :func:`marked_or_sorted_ids` sorts the ids rather than marking the classes above this many classes per
#: id (measured at 1 thread: at V = 1M, 6k ids sort in 0.3 ms against 1.5 ms to mark, 26k ids cost
#: the same either way; at V = 100k-300k and 26k ids marking is 1.5-2x faster).
SORT_ABOVE_CLASSES_PER_ID = 16

#: The row-blocked pass of :func:`chunked_logsumexp` runs only when a block holds at least this
#: many rows (or all of them): each block streams all V weight rows through two products and adds
#: into the whole (V, H) gradient, and with fewer rows those products stop being compute-bound.
MIN_ROW_BLOCK = 128

#: Logits a row block may hold when the caller sets no budget, on any device, though never more
#: than the (V, H) weight matrix has elements: the block is then at most as large as the weight
#: gradient the step writes anyway. On the CPU at N x H x V = 1024 x 256 x 1M the 64 MiB chunk
#: budget fits 16 rows (vocabulary chunks, four products); a (V, 256) block of 1 GiB takes the
#: step to three products, 19.98 -> 16.26 s paired (``docs/design/full-softmax-blocks.md``).
ROW_BLOCK_ELEMENTS = 1 << 28

#: Logits a vocabulary chunk holds on the CPU when the caller sets no budget and the chunks are
#: streamed (recomputed in the backward, not kept and not row blocks), 2 MiB in float32: small
#: enough that a chunk stays in cache through its product and the elementwise passes after it
#: (peak, subtract, exp, sum; in the backward the shift, exp and two products). That path runs
#: where a row block of ``MIN_ROW_BLOCK`` rows does not fit the weight's size, i.e. H < 128,
#: where the products are thin and those passes dominate: at N x H x V = 1024 x 32 x 1M, one
#: thread, a step's forward and backward took 13.9-14.8 s against 17.0-17.2 s with 64 MiB chunks
#: (``docs/design/full-softmax-blocks.md``).
STREAMED_CHUNK_ELEMENTS = 1 << 19

#: Most rows for which :func:`example_logits` takes its product class-major on the CPU.
FEW_ROWS = 8


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, param: Tensor, ids: Tensor) -> Tensor:
        ctx.save_for_backward(ids)
        ctx.param_shape = param.shape
        return param.index_select(0, ids)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (ids,) = ctx.saved_tensors
        # ids are in range by construction (they indexed the forward), so skip the invariant check.
        sparse = torch.sparse_coo_tensor(ids.unsqueeze(0), grad, ctx.param_shape, check_invariants=False)
        return sparse, None


def gather_rows(param: Tensor, ids: Tensor, *, sparse: bool = True) -> Tensor:
    """``param[ids]`` for ids of shape (M,); with ``sparse`` its gradient is a sparse COO tensor
    holding only the M touched rows, so an SGD step costs O(M·H) rather than O(V·H). A parameter
    with a fused optimiser (``OutputLayer.fuse_optimizer``) gets no gradient: the backward updates
    its touched rows in place (:mod:`bigvocab.outputs.fused`)."""
    fused = fused_gather(param, ids)
    if fused is not None:
        return fused
    if sparse and param.requires_grad and torch.is_grad_enabled():
        return _GatherRows.apply(param, ids)
    return param.index_select(0, ids)


def row_pair_dots(
    hidden: Tensor, param: Tensor, unique: Tensor, example: Tensor, row: Tensor, *, sparse: bool
) -> Tensor:
    """(P,) scores ``hidden[example[p]] . param[unique[row[p]]]`` by the compiled pair kernel
    (:mod:`bigvocab.kernels.pairs`; CPU, float32 or float64) for hidden (N, H), rows ``param``
    (V, H), distinct sorted ids ``unique`` (U,) and P pairs (``example`` in [0, N), ``row`` in
    [0, U)), differentiable in both: ``param``'s rows are gathered with :func:`gather_rows`, or,
    when ``param`` has a fused optimiser, read where they lie and updated in the backward in one
    pass (:mod:`bigvocab.outputs.fused.pairs`)."""
    fused = fused_pair_dots(hidden, param, unique, example, row)
    if fused is not None:
        return fused
    from bigvocab.kernels.pairs import flat_pair_dots  # numba loads on first use

    return flat_pair_dots(hidden, gather_rows(param, unique, sparse=sparse), example, row)


def fill_padding(target: Tensor) -> Tensor:
    """(N, T) ids padded with -1 -> (N, T) with each -1 replaced by its row's first positive, so
    that scoring the padding gathers no row the positives do not (a sparse gradient then touches
    only the positives' rows, and no optimiser state of another row moves). Every row holds a
    positive."""
    valid = target >= 0
    first = target.gather(1, valid.to(torch.uint8).argmax(dim=1, keepdim=True))
    return torch.where(valid, target, first)


def pairs_compiled(hidden: Tensor) -> bool:
    """Per-example ids (and a tree's paths) are scored by the compiled pair kernel
    (:mod:`bigvocab.kernels.pairs`) on CPU in float32 or float64; other devices gather the
    rows and score them with an elementwise product and a sum (which a GPU does well)."""
    return hidden.device.type == "cpu" and hidden.dtype in (torch.float32, torch.float64)


def distinct_ids(ids: Tensor, num_classes: int) -> tuple[Tensor, Tensor]:
    """(unique, inverse) of ids in [0, num_classes): the sorted distinct ids (U,) and, in the
    shape of ``ids``, each one's position in them, as ``torch.unique(..., return_inverse=True)``.

    On the CPU a compiled bitmap over the classes (:func:`~bigvocab.kernels.ids.distinct_sorted`):
    O(V / 64 + M) for M ids and no sort, 2.6-17x faster than :func:`marked_or_sorted_ids` (used
    elsewhere) for a step's 6k-263k ids at V = 10k-1M, and training steps of ``nce``, ``neg`` and
    ``hsm`` 1.05-1.18x faster at V = 1M (``docs/design/distinct-ids.md``).
    """
    flat = ids.reshape(-1)
    if flat.device.type != "cpu":
        return marked_or_sorted_ids(ids, num_classes)
    from bigvocab.kernels.ids import distinct_sorted  # numba loads on first use

    try:
        unique, inverse = distinct_sorted(flat.to(torch.long), num_classes)
    except IndexError:
        raise IndexError(
            f"class ids must lie in [0, {num_classes}), got {int(flat.min())}..{int(flat.max())}"
        ) from None
    return unique, inverse.view(ids.shape)


def marked_or_sorted_ids(ids: Tensor, num_classes: int) -> tuple[Tensor, Tensor]:
    """:func:`distinct_ids` by torch operations, for any device: a mark per class instead of a
    sort, O(V + M) work for M ids, which at a training step's few hundred thousand draws is
    several times cheaper than sorting them -- unless V is much larger than M (a few thousand
    negatives at V = 1M), where the sort's O(M log M) wins. The marks are written by ``scatter_``
    and the positions read by ``index_select``: torch's indexed assignment (``present[ids] = True``)
    and ``position[ids]`` were as slow or slower at every size measured, up to 3x
    (``docs/design/distinct-ids.md``).
    """
    flat = ids.reshape(-1)
    if num_classes > SORT_ABOVE_CLASSES_PER_ID * flat.numel():
        return torch.unique(ids, sorted=True, return_inverse=True)
    present = torch.zeros(num_classes, dtype=torch.uint8, device=ids.device)
    unique = present.scatter_(0, flat, 1).nonzero().squeeze(1)
    position = torch.empty(num_classes, dtype=torch.long, device=ids.device)
    position[unique] = torch.arange(unique.numel(), device=ids.device)
    return unique, position.index_select(0, flat).view(ids.shape)


def chunk_budget(max_elements: int | None, device: torch.device) -> int:
    """Logits a chunk may hold: ``max_elements`` when the caller gives it, else the default of
    ``device``'s kind (:data:`CUDA_CHUNK_ELEMENTS` on CUDA, :data:`DEFAULT_CHUNK_ELEMENTS` elsewhere)."""
    if max_elements is not None:
        return max_elements
    return CUDA_CHUNK_ELEMENTS if torch.device(device).type == "cuda" else DEFAULT_CHUNK_ELEMENTS


def chunk_size_for(num_rows: int, num_classes: int, budget: int) -> int:
    """Classes per chunk so that a (num_rows, chunk) block holds at most ``budget`` logits."""
    return max(1, min(num_classes, budget // max(1, num_rows)))


def example_logits(hidden: Tensor, weight: Tensor, bias: Tensor | None, *, out: Tensor | None = None) -> Tensor:
    """(N, C) logits h Wᵀ (+ b) of hidden (N, H) against the class rows weight (C, H), bias (C,),
    into ``out`` (N, C) when given (it may be the first columns of wider rows).

    With up to :data:`FEW_ROWS` rows on the CPU the product is taken class-major, W hᵀ (C, N), and
    copied out transposed: at H = 256 and C = 33k-1M the BLAS product h Wᵀ ran 1.7-6.7x slower
    than that for N = 2-8 (213 against 56 ms for 4 rows at 1M, where the weights stream in 32 ms),
    and within noise of it from about 12 rows on (``docs/design/few-row-logits.md``). One row goes in twice:
    as a matrix-vector product, either way round, it took about as long as h Wᵀ for 4 rows (150 ms
    at 1M), two copies class-major 46 ms."""
    rows = hidden.shape[0]
    if rows <= FEW_ROWS and hidden.device.type == "cpu":
        pair = hidden.expand(2, -1).contiguous() if rows == 1 else hidden
        logits = _class_major_logits(pair, weight, bias, 0, weight.shape[0])[:, :rows].t()
        return logits.contiguous() if out is None else out.copy_(logits)
    if bias is None:
        return torch.mm(hidden, weight.t(), out=out)
    # The bias enters the product's output (addmm) rather than a second (N, C) pass.
    return torch.addmm(bias, hidden, weight.t(), out=out)


def _class_major_logits(
    hidden: Tensor, weight: Tensor, bias: Tensor | None, start: int, stop: int, *, out: Tensor | None = None
) -> Tensor:
    """(stop - start, N) logits of classes ``start:stop``, class-major, into ``out`` when given.

    The vocabulary-chunk passes take their logits as W_c hᵀ rather than h W_cᵀ: on the CPU (MKL)
    the (C, H) x (H, N) product ran about 1.7x faster than the (N, H) x (H, C) one for N = 1024,
    C = 16,384, H = 256, and the chunked step 1.09-1.25x faster; a chunk of classes is then a
    contiguous block of rows of the scratch buffer (``docs/design/full-softmax-blocks.md``).
    """
    if bias is None:
        return torch.mm(weight[start:stop], hidden.t(), out=out)
    return torch.addmm(bias[start:stop].unsqueeze(1), weight[start:stop], hidden.t(), out=out)


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype log Z is accumulated in: float32 for bfloat16/float16 logits, else their own.

    A running log Z kept in bfloat16 stops growing once a chunk's share falls below its spacing
    (0.06 at log Z = 13): over 196 chunks of a V = 200k softmax it ended 1.7 nats low."""
    return torch.promote_types(dtype, torch.float32)


def _logsumexp_(logits: Tensor, dim: int = 1) -> tuple[Tensor, Tensor]:
    """(peak, log Σ exp) over ``dim`` of 2-D ``logits``, which it overwrites with
    exp(logits - peak): no temporaries of its size. The peak keeps the logits' dtype; the log-sum
    is summed and returned in :func:`accumulation_dtype`."""
    peak = logits.amax(dim=dim)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    wide = accumulation_dtype(logits.dtype)
    sum_exp = logits.sub_(peak.unsqueeze(dim)).exp_().sum(dim=dim, dtype=wide)
    return peak, peak.to(wide) + torch.log(sum_exp)


class _ChunkedLogSumExp(torch.autograd.Function):
    """(log Z, target logit) of ``hidden @ weight.T + bias`` without the (N, V) matrix.

    Forward: one product per chunk into a reused (chunk, N) scratch block (every chunk reuses one
    allocation, so none pays fresh pages: a 64 MiB block page-faults for milliseconds on first
    touch), whose running maximum and sum-exp update log Z in place (amax, subtract, exp, sum: the
    block never leaves the chunk). Chunks are class-major (:func:`_class_major_logits`).

    Backward: with P = softmax and g the upstream gradient of log Z, the gradients are
    ``g ⊙ (P W)`` for hidden, ``Pᵀ (g ⊙ hidden)`` for the weights and ``Pᵀ g`` for the bias; the
    target logit adds ``W[t]`` and ``hidden`` at the target rows, an O(N·H) correction after the
    loop. So each chunk costs exactly two products and one exp pass: its logits are recomputed
    already shifted by -log Z (the product accumulates into a block holding ``bias - log Z``), and
    g scales (N, H) operands rather than the (chunk, N) block. When the whole vocabulary fits in
    one chunk the forward keeps exp(logits - peak) and the backward folds exp(peak - log Z) into
    g: three products a step, the least a softmax step can do. Otherwise the recomputation is one
    extra product per chunk, the price of holding one (chunk, N) block instead of N·V logits --
    unless the caller weighs the rows alike and blocks of whole rows fit the row-block budget
    (``row_block`` > 0, :func:`_row_blocked_pass`): then three products again.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, chunk, row_block):
        ctx.fused = None
        if row_block and any(ctx.needs_input_grad[:3]):
            log_z, ctx.fused = _row_blocked_pass(hidden, weight, bias, row_block, ctx.needs_input_grad[:3])
            ctx.kept = None
            return _finish_forward(ctx, hidden, weight, bias, target, log_z, chunk)
        num_classes = weight.shape[0]
        log_z = hidden.new_full((hidden.shape[0],), float("-inf"), dtype=accumulation_dtype(hidden.dtype))
        buffer = hidden.new_empty((min(chunk, num_classes), hidden.shape[0]))
        for start in range(0, num_classes, chunk):
            stop = min(start + chunk, num_classes)
            logits = _class_major_logits(hidden, weight, bias, start, stop, out=buffer[: stop - start])
            peak, chunk_log_z = _logsumexp_(logits, dim=0)
            log_z = torch.logaddexp(log_z, chunk_log_z)
        keep = chunk >= num_classes and any(ctx.needs_input_grad[:3])
        ctx.kept = (buffer, peak) if keep else None  # the one (V, N) chunk, as exp(logits - peak)
        return _finish_forward(ctx, hidden, weight, bias, target, log_z, chunk)

    @staticmethod
    def backward(ctx, grad_log_z, grad_target):
        if ctx.fused is not None:
            return _fused_backward(ctx, grad_log_z, grad_target)
        hidden, weight, bias, target, log_z = ctx.saved_tensors
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        need_bias = need_bias and bias is not None
        # P = probs * row_scale: the kept chunk is exp(logits - peak), recomputed ones softmax.
        row_scale = grad_log_z if ctx.kept is None else grad_log_z * torch.exp(ctx.kept[1] - log_z).to(hidden.dtype)
        sum_probs_weight, grad_weight, grad_bias = _chunked_grads(
            hidden, weight, bias, log_z, row_scale, ctx.chunk, ctx.kept, (need_hidden, need_weight, need_bias)
        )
        grad_hidden = None
        if sum_probs_weight is not None:
            grad_hidden = sum_probs_weight.mul_(row_scale.unsqueeze(1))
            grad_hidden.addcmul_(weight.index_select(0, target), grad_target.unsqueeze(1))
        if grad_weight is not None:
            grad_weight.index_add_(0, target, hidden * grad_target.unsqueeze(1))
        if grad_bias is not None:
            grad_bias.index_add_(0, target, grad_target)
        return grad_hidden, grad_weight, grad_bias, None, None, None


def _chunked_grads(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    log_z: Tensor,
    row_scale: Tensor,
    chunk: int,
    kept: tuple[Tensor, Tensor] | None,
    needs: tuple[bool, bool, bool],
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """``(P W, Pᵀ (row_scale ⊙ hidden), Pᵀ row_scale)`` by vocabulary chunks, each ``None`` where
    ``needs`` says so; P is recomputed as exp(logits - log Z), or read from ``kept`` (the one
    chunk as exp(logits - peak), with exp(peak - log Z) already folded into ``row_scale``). Chunks
    are class-major, (chunk, N), like the forward's."""
    need_hidden, need_weight, need_bias = needs
    num_classes = weight.shape[0]
    buffer = kept[0] if kept is not None else hidden.new_empty((min(chunk, num_classes), hidden.shape[0]))
    scaled_hidden = hidden * row_scale.unsqueeze(1) if need_weight else None
    sum_probs_weight = torch.zeros_like(hidden) if need_hidden else None
    grad_weight = torch.empty_like(weight) if need_weight else None
    grad_bias = torch.empty_like(bias) if need_bias and bias is not None else None
    for start in range(0, num_classes, chunk):
        stop = min(start + chunk, num_classes)
        probs = buffer[: stop - start]
        if kept is None:
            # bias - log Z is broadcast straight into the block: no (chunk, N) temporary.
            if bias is None:
                probs.copy_(log_z.neg().unsqueeze(0).expand_as(probs))
            else:
                torch.sub(bias[start:stop].unsqueeze(1), log_z.unsqueeze(0), out=probs)
            probs.addmm_(weight[start:stop], hidden.t()).exp_()
        if sum_probs_weight is not None:
            sum_probs_weight.addmm_(probs.t(), weight[start:stop])
        if grad_weight is not None and scaled_hidden is not None:
            torch.mm(probs, scaled_hidden, out=grad_weight[start:stop])
        if grad_bias is not None:
            torch.mv(probs, row_scale, out=grad_bias[start:stop])
    return sum_probs_weight, grad_weight, grad_bias


def _finish_forward(ctx, hidden, weight, bias, target, log_z, chunk):
    """The target logits, and what the backward reads, after either forward pass."""
    target_logit = (hidden * weight.index_select(0, target)).sum(1)
    if bias is not None:
        target_logit = target_logit + bias.index_select(0, target)
    ctx.save_for_backward(hidden, weight, bias, target, log_z)  # in accumulation_dtype, for the backward
    ctx.chunk = chunk
    return log_z.to(hidden.dtype), target_logit


def _row_blocked_pass(
    hidden: Tensor, weight: Tensor, bias: Tensor | None, row_block: int, needs: tuple[bool, ...]
) -> tuple[Tensor, dict]:
    """log Z (N,) and the gradients of Σ_n log Z_n, for the rows ``row_block`` at a time.

    Each block's logits are complete, so its softmax P is exact at once and the gradients come
    from the same block: ``P W`` for hidden (row n's own, so any later per-row weight applies to
    it exactly), ``Pᵀ hidden`` for the weights and ``Pᵀ 1`` for the bias, summed over the rows.
    Three products a step, against four for the vocabulary chunks, whose softmax is only known
    after the last chunk and so has to be recomputed. P = E diag(scale) with
    E = exp(logits - peak): the scale multiplies the (rows, H) operands, not the block.

    Blocks are class-major, (V, rows), as the vocabulary chunks are (:func:`_class_major_logits`):
    at V = 1M and 256 rows on the CPU the three products ran at 124-141 GFLOP/s
    (``docs/design/full-softmax-blocks.md``). A partial last block is the front of the same
    storage, so it too is contiguous.
    """
    need_hidden, need_weight, need_bias = needs
    num_rows, num_classes = hidden.shape[0], weight.shape[0]
    log_z = hidden.new_empty(num_rows, dtype=accumulation_dtype(hidden.dtype))
    grads = {
        "hidden": hidden.new_empty(hidden.shape) if need_hidden else None,
        "weight": torch.empty_like(weight) if need_weight else None,
        "bias": torch.empty_like(bias) if need_bias and bias is not None else None,
    }
    storage = hidden.new_empty(min(row_block, num_rows) * num_classes)
    for start in range(0, num_rows, row_block):
        stop = min(start + row_block, num_rows)
        rows = hidden[start:stop]
        exp_logits = storage[: num_classes * (stop - start)].view(num_classes, stop - start)
        _class_major_logits(rows, weight, bias, 0, num_classes, out=exp_logits)
        peak, block_log_z = _logsumexp_(exp_logits, dim=0)
        log_z[start:stop] = block_log_z
        scale = torch.exp(peak - block_log_z).to(hidden.dtype)
        if grads["hidden"] is not None:
            torch.mm(exp_logits.t(), weight, out=grads["hidden"][start:stop]).mul_(scale.unsqueeze(1))
        # The first block writes the (V, H) sums, the others add to them: no zero-filling pass.
        beta = 0.0 if start == 0 else 1.0
        if grads["weight"] is not None:
            grads["weight"].addmm_(exp_logits, rows * scale.unsqueeze(1), beta=beta)
        if grads["bias"] is not None:
            grads["bias"].addmv_(exp_logits, scale, beta=beta)
    return log_z, grads


def _fused_backward(ctx, grad_log_z: Tensor, grad_target: Tensor):
    """Scale the gradients the row-blocked forward formed. The hidden rows take any upstream
    weights; the weights and bias sum over rows, so they are exact as formed only for equal
    weights (a mean or a sum of the losses) and are recomputed by vocabulary chunks otherwise."""
    hidden, weight, bias, target, log_z = ctx.saved_tensors
    grads = ctx.fused
    ctx.fused = None  # the (V, H) buffer becomes the returned gradient: nothing else holds it
    grad_hidden = grads["hidden"]
    if grad_hidden is not None:
        grad_hidden.mul_(grad_log_z.unsqueeze(1))
        grad_hidden.addcmul_(weight.index_select(0, target), grad_target.unsqueeze(1))
    grad_weight, grad_bias = grads["weight"], grads["bias"]
    if grad_weight is not None or grad_bias is not None:
        if bool((grad_log_z == grad_log_z[0]).all()):
            for grad in (grad_weight, grad_bias):
                if grad is not None:
                    grad.mul_(grad_log_z[0])
        else:
            needs = (False, grad_weight is not None, grad_bias is not None)
            _, grad_weight, grad_bias = _chunked_grads(hidden, weight, bias, log_z, grad_log_z, ctx.chunk, None, needs)
        if grad_weight is not None:
            grad_weight.index_add_(0, target, hidden * grad_target.unsqueeze(1))
        if grad_bias is not None:
            grad_bias.index_add_(0, target, grad_target)
    return grad_hidden, grad_weight, grad_bias, None, None, None


def chunked_logsumexp(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    target: Tensor,
    *,
    max_chunk_elements: int | None = None,
    equal_row_weights: bool = False,
) -> tuple[Tensor, Tensor]:
    """Return ``(log Z, s_target)``, each (N,), for logits ``s = hidden @ weight.T + bias``.

    hidden (N, H), weight (V, H), bias (V,) or None, target (N,). Both outputs are
    differentiable; the cross-entropy is ``log_z - s_target``.

    ``equal_row_weights`` says that the caller weighs every row's log Z alike (a mean or sum of
    per-example losses, as ``full`` does). Where the (N, V) logits exceed the chunk budget but a
    block of at least :data:`MIN_ROW_BLOCK` whole rows (or all N) fits the row-block budget, the
    forward then takes the rows a block at a time and forms the gradients there: three products a
    step instead of four. The row-block budget is ``max_chunk_elements`` when given, else the
    larger of the chunk budget and :data:`ROW_BLOCK_ELEMENTS` capped at the weight's size (V·H).
    The result is exact either way; rows weighed unequally after all cost one more product (the
    weight and bias gradients are recomputed by vocabulary chunks). Vocabulary chunks that are
    streamed (neither one kept chunk nor row blocks) hold at most :data:`STREAMED_CHUNK_ELEMENTS`
    logits on the CPU when no budget is given, so that each stays in cache.
    """
    num_rows, num_classes = hidden.shape[0], weight.shape[0]
    budget = chunk_budget(max_chunk_elements, hidden.device)
    chunk = chunk_size_for(num_rows, num_classes, budget)
    row_budget = budget if max_chunk_elements is not None else max(budget, min(ROW_BLOCK_ELEMENTS, weight.numel()))
    rows_that_fit = min(num_rows, row_budget // num_classes)
    use_row_blocks = equal_row_weights and chunk < num_classes and rows_that_fit >= min(MIN_ROW_BLOCK, num_rows)
    streamed = chunk < num_classes and not use_row_blocks
    if streamed and max_chunk_elements is None and hidden.device.type == "cpu":
        chunk = chunk_size_for(num_rows, num_classes, STREAMED_CHUNK_ELEMENTS)
    return _ChunkedLogSumExp.apply(hidden, weight, bias, target, chunk, rows_that_fit if use_row_blocks else 0)


def chunked_topk(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    k: int,
    *,
    max_chunk_elements: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Exact top-k log-probabilities and ids of the linear softmax, (N, k) each, best first.

    One pass over the vocabulary keeps a running top-k of the logits and a running log Z.
    """
    num_rows, num_classes = hidden.shape[0], weight.shape[0]
    chunk = max(k, chunk_size_for(num_rows, num_classes, chunk_budget(max_chunk_elements, hidden.device)))
    log_z = hidden.new_full((num_rows,), float("-inf"), dtype=accumulation_dtype(hidden.dtype))
    best_values = hidden.new_empty((num_rows, 0))
    best_ids = torch.empty((num_rows, 0), dtype=torch.long, device=hidden.device)
    with torch.no_grad():
        for start in range(0, num_classes, chunk):
            stop = min(start + chunk, num_classes)
            logits = example_logits(hidden, weight[start:stop], None if bias is None else bias[start:stop])
            values, ids = logits.topk(min(k, logits.shape[1]), dim=1)
            log_z = torch.logaddexp(log_z, _logsumexp_(logits)[1])  # after topk: it overwrites the logits
            merged_values = torch.cat([best_values, values], dim=1)
            merged_ids = torch.cat([best_ids, ids + start], dim=1)
            best_values, order = merged_values.topk(min(k, merged_values.shape[1]), dim=1)
            best_ids = merged_ids.gather(1, order)
    return (best_values - log_z.unsqueeze(1)).to(hidden.dtype), best_ids
