"""``chunked_logsumexp`` against a brute-force log-sum-exp: values and every gradient."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from bigvocab.outputs import functional
from bigvocab.outputs.functional import (
    SORT_ABOVE_CLASSES_PER_ID,
    chunked_logsumexp,
    chunked_topk,
    distinct_ids,
    marked_or_sorted_ids,
)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("budget", [6, 35, None], ids=["chunks-partial-last", "chunks-exact", "one-chunk-kept"])
def test_gradients_of_both_outputs_under_any_upstream_gradient(bias, budget):
    """Both outputs weighted by arbitrary (also negative) upstream gradients: the backward folds
    them into (N, H) operands and adds the target term after the loop, which gradcheck verifies
    for hidden, weight and bias at once."""
    generator = torch.Generator().manual_seed(3)
    hidden = torch.randn(5, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(14, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    bias_param = torch.randn(14, dtype=torch.float64, generator=generator, requires_grad=True) if bias else None
    target = torch.tensor([0, 13, 6, 6, 7])
    up_log_z = torch.tensor([0.5, -2.0, 1.0, 3.0, 0.0], dtype=torch.float64)
    up_target = torch.tensor([1.0, 0.25, -1.5, 2.0, -0.5], dtype=torch.float64)

    def objective(h, w, *b):
        log_z, logit = chunked_logsumexp(h, w, b[0] if b else None, target, max_chunk_elements=budget)
        return (log_z * up_log_z).sum() + (logit * up_target).sum()

    inputs = (hidden, weight) + ((bias_param,) if bias else ())
    torch.autograd.gradcheck(objective, inputs)
    logits = hidden @ weight.t() + (bias_param if bias else 0)
    log_z, logit = chunked_logsumexp(hidden, weight, bias_param, target, max_chunk_elements=budget)
    torch.testing.assert_close(log_z, torch.logsumexp(logits, dim=1))
    torch.testing.assert_close(logit, logits.gather(1, target.unsqueeze(1)).squeeze(1))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("upstream", ["equal", "unequal"])
def test_row_blocks_give_the_same_values_and_gradients(monkeypatch, bias, upstream):
    """The row-blocked forward (rows weighed alike, blocks of whole rows fit the budget: here 2
    rows of 14 classes, 3 blocks for 5 rows, the last one partial) against gradcheck and the
    brute-force values. Unequal upstream weights must stay exact through the recomputation."""
    monkeypatch.setattr(functional, "MIN_ROW_BLOCK", 2)
    calls = []
    monkeypatch.setattr(functional, "_row_blocked_pass", _counting(functional._row_blocked_pass, calls))
    generator = torch.Generator().manual_seed(4)
    hidden = torch.randn(5, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(14, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    bias_param = torch.randn(14, dtype=torch.float64, generator=generator, requires_grad=True) if bias else None
    target = torch.tensor([0, 13, 6, 6, 7])
    if upstream == "equal":
        up_log_z = torch.full((5,), 0.75, dtype=torch.float64)
    else:
        up_log_z = torch.tensor([0.5, -2.0, 1.0, 3.0, 0.0], dtype=torch.float64)
    up_target = torch.tensor([1.0, 0.25, -1.5, 2.0, -0.5], dtype=torch.float64)

    def objective(h, w, *b):
        log_z, logit = chunked_logsumexp(
            h, w, b[0] if b else None, target, max_chunk_elements=2 * 14, equal_row_weights=True
        )
        return (log_z * up_log_z).sum() + (logit * up_target).sum()

    inputs = (hidden, weight) + ((bias_param,) if bias else ())
    # gradcheck runs the backward twice over one graph; the first hands the gradients formed in
    # the forward over (so that autograd can take them without a copy), and the second recomputes
    # them by vocabulary chunks: equal up to rounding, not bit for bit.
    torch.autograd.gradcheck(objective, inputs, nondet_tol=1e-12)
    assert calls, "the row-blocked pass was not taken"
    logits = hidden @ weight.t() + (bias_param if bias else 0)
    log_z, _ = chunked_logsumexp(hidden, weight, bias_param, target, max_chunk_elements=28, equal_row_weights=True)
    torch.testing.assert_close(log_z, torch.logsumexp(logits, dim=1))


def assert_equals_cross_entropy(hidden: Tensor, weight: Tensor, target: Tensor, loss: Tensor) -> None:
    """``loss`` (already backwarded into ``hidden.grad`` and ``weight.grad``) equals the brute-force
    mean cross-entropy of the full logits, value and gradients."""
    reference_hidden = hidden.detach().clone().requires_grad_()
    reference_weight = weight.detach().clone().requires_grad_()
    reference = torch.nn.functional.cross_entropy(reference_hidden @ reference_weight.t(), target)
    reference.backward()
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(hidden.grad, reference_hidden.grad)
    torch.testing.assert_close(weight.grad, reference_weight.grad)


def test_row_blocks_are_not_used_below_the_minimum_block(monkeypatch):
    """With the shipped minimum, a budget of a few rows keeps the vocabulary chunks."""
    calls = []
    monkeypatch.setattr(functional, "_row_blocked_pass", _counting(functional._row_blocked_pass, calls))
    hidden = torch.randn(300, 4, requires_grad=True)
    weight = torch.randn(20, 4, requires_grad=True)
    target = torch.zeros(300, dtype=torch.long)
    budget = (functional.MIN_ROW_BLOCK - 1) * 20
    log_z, logit = chunked_logsumexp(hidden, weight, None, target, max_chunk_elements=budget, equal_row_weights=True)
    (log_z - logit).sum().backward()
    assert not calls


@pytest.mark.parametrize(
    "rows, min_block, budget, expected_block",
    [(6, 3, None, 4), (3, 128, None, 3), (6, 3, 28, 0)],
    ids=["default-blocks-of-VxH", "one-block-of-all-rows-below-the-minimum", "explicit-budget-wins"],
)
def test_default_row_block_budget_is_the_weight_size(monkeypatch, rows, min_block, budget, expected_block):
    """With no budget given, a row block may hold as many logits as the weight has elements
    (capped by ROW_BLOCK_ELEMENTS), here 14 x 4 = 56: 4 whole rows of V = 14, where the chunk
    budget (patched to 28) holds 2. Fewer rows than the minimum take one block of all of them; an
    explicit budget is the row blocks' budget too. Values and gradients against brute force."""
    monkeypatch.setattr(functional, "DEFAULT_CHUNK_ELEMENTS", 28)
    monkeypatch.setattr(functional, "ROW_BLOCK_ELEMENTS", 1000)
    monkeypatch.setattr(functional, "MIN_ROW_BLOCK", min_block)
    blocks = []
    original = functional._row_blocked_pass
    monkeypatch.setattr(functional, "_row_blocked_pass", lambda *a: blocks.append(a[3]) or original(*a))
    generator = torch.Generator().manual_seed(5)
    hidden = torch.randn(rows, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(14, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    target = torch.arange(rows) * 2
    log_z, logit = chunked_logsumexp(hidden, weight, None, target, max_chunk_elements=budget, equal_row_weights=True)
    (log_z - logit).mean().backward()
    assert blocks == ([expected_block] if expected_block else [])
    assert_equals_cross_entropy(hidden, weight, target, (log_z - logit).mean())


def test_default_budget_follows_the_device_and_an_explicit_one_wins():
    """None means 2**24 logits on the CPU and 2**28 on CUDA (where the row-blocked pass then runs
    to V = 2M at N = 1024); a budget the caller gives is used as given on either."""
    assert functional.chunk_budget(None, torch.device("cpu")) == functional.DEFAULT_CHUNK_ELEMENTS == 1 << 24
    assert functional.chunk_budget(None, torch.device("cuda", 1)) == functional.CUDA_CHUNK_ELEMENTS == 1 << 28
    assert functional.chunk_budget(None, "meta") == functional.DEFAULT_CHUNK_ELEMENTS
    assert functional.chunk_budget(1000, torch.device("cuda")) == 1000
    assert functional.CUDA_CHUNK_ELEMENTS // 1_000_000 >= functional.MIN_ROW_BLOCK * 2


def _bf16_half_spacing(values: torch.Tensor) -> torch.Tensor:
    """Half the gap between adjacent bfloat16 numbers at ``values`` (8 significant bits)."""
    return torch.exp2(torch.floor(torch.log2(values.abs())) - 8)


@pytest.mark.parametrize("row_weights", ["equal", "unequal"])
def test_bfloat16_log_z_over_many_chunks_is_rounded_once(row_weights):
    """bfloat16 inputs, 98 vocabulary chunks: log Z and the top-k log-probabilities may differ
    from float64 on the same rounded inputs only by the roundings bfloat16 forces -- the output's
    (half a spacing), each logit's (2**-9 relative, at most 2**-9 max|logit| in log Z) and the
    exp terms' (2**-8 relative, at most 2**-8 in log Z). A log Z accumulated in bfloat16 across
    chunks stalls instead (1.7 nats low at V = 200k)."""
    generator = torch.Generator().manual_seed(7)
    num_rows, width, num_classes = 16, 32, 50_000
    hidden = (torch.randn(num_rows, width, generator=generator) / width**0.5).bfloat16()
    weight = torch.randn(num_classes, width, generator=generator).bfloat16()
    target = torch.randint(0, num_classes, (num_rows,), generator=generator)
    logits = hidden.double() @ weight.double().t()
    want = torch.logsumexp(logits, dim=1)
    budget = num_rows * 512
    log_z, _ = chunked_logsumexp(
        hidden, weight, None, target, max_chunk_elements=budget, equal_row_weights=row_weights == "equal"
    )
    assert log_z.dtype == torch.bfloat16
    tolerance = _bf16_half_spacing(want) + 2.0**-9 * logits.abs().max() + 2.0**-8
    assert ((log_z.double() - want).abs() <= tolerance).all()
    values, ids = chunked_topk(hidden, weight, None, 5, max_chunk_elements=budget)
    want_values = logits.gather(1, ids) - want.unsqueeze(1)
    tolerance = _bf16_half_spacing(want_values) + 2.0**-8 * logits.abs().max() + 2.0**-8
    assert ((values.double() - want_values).abs() <= tolerance).all()


def _counting(function, calls):
    def wrapper(*args, **kwargs):
        calls.append(1)
        return function(*args, **kwargs)

    return wrapper


def test_extreme_logits_stay_finite():
    """Logits far beyond exp's range in different chunks: the running maximum keeps log Z and
    the recomputed softmax finite."""
    hidden = torch.tensor([[1.0], [-1.0]], requires_grad=True)
    weight = torch.tensor([[900.0], [0.0], [-900.0], [450.0]], requires_grad=True)
    target = torch.tensor([1, 2])
    log_z, logit = chunked_logsumexp(hidden, weight, None, target, max_chunk_elements=2)
    (log_z - logit).sum().backward()
    torch.testing.assert_close(log_z, torch.logsumexp(hidden @ weight.t(), dim=1))
    assert torch.isfinite(hidden.grad).all() and torch.isfinite(weight.grad).all()


@pytest.mark.parametrize("num_classes", [50, 50 * 63 * SORT_ABOVE_CLASSES_PER_ID])  # marks, then sorts
def test_marked_or_sorted_ids_is_torch_unique_with_inverse(num_classes):
    ids = torch.randint(0, 50, (7, 9), generator=torch.Generator().manual_seed(0))
    unique, inverse = marked_or_sorted_ids(ids, num_classes)
    want_unique, want_inverse = torch.unique(ids, return_inverse=True)
    assert torch.equal(unique, want_unique) and torch.equal(inverse, want_inverse)


@pytest.mark.parametrize(
    "num_classes, shape",
    [(50, (7, 9)), (64, (200,)), (65, (3, 40)), (130, (500,)), (1000, (2, 3)), (100_003, (1024, 26)), (7, (0,))],
)
def test_distinct_ids_bitmap_is_torch_unique_with_inverse(num_classes, shape):
    """Ids on both sides of 64-bit word boundaries, V not a multiple of 64, the last class, none."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, num_classes, shape, generator=generator)
    if ids.numel() >= 4:
        ids.view(-1)[:4] = torch.tensor([0, num_classes - 1, min(63, num_classes - 1), min(64, num_classes - 1)])
    unique, inverse = distinct_ids(ids, num_classes)
    want_unique, want_inverse = torch.unique(ids, sorted=True, return_inverse=True)
    assert torch.equal(unique, want_unique) and torch.equal(inverse, want_inverse)
    assert unique.dtype == inverse.dtype == torch.long


@pytest.mark.parametrize("bad", [-1, 50])
def test_distinct_ids_rejects_ids_out_of_range(bad):
    with pytest.raises(IndexError, match=r"class ids must lie in \[0, 50\), got"):
        distinct_ids(torch.tensor([3, bad, 7]), 50)


@pytest.mark.parametrize("rows", [1, 2, functional.FEW_ROWS, functional.FEW_ROWS + 1])
@pytest.mark.parametrize("bias", [True, False])
def test_example_logits_equal_the_dense_product_whichever_orientation_runs(rows, bias):
    """Few rows take the class-major product and a transposing copy, more rows h Wᵀ: both must
    give h Wᵀ + b, contiguous, differentiable, and fill an ``out`` that is the first columns of
    wider rows (as the exact hsm pass passes it) without touching the rest."""
    torch.manual_seed(0)
    hidden = torch.randn(rows, 6, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(13, 6, dtype=torch.float64, requires_grad=True)
    offset = torch.randn(13, dtype=torch.float64, requires_grad=True) if bias else None
    expected = hidden @ weight.t() + (offset if bias else 0)
    logits = functional.example_logits(hidden, weight, offset)
    assert logits.is_contiguous()
    torch.testing.assert_close(logits, expected)
    inputs = (hidden, weight, offset) if bias else (hidden, weight)
    assert torch.autograd.gradcheck(
        lambda *xs: functional.example_logits(xs[0], xs[1], xs[2] if bias else None), inputs
    )
    with torch.no_grad():
        wide = torch.full((rows, 16), float("nan"), dtype=torch.float64)
        into = functional.example_logits(hidden, weight, offset, out=wide[:, :13])
    assert into.data_ptr() == wide.data_ptr()
    torch.testing.assert_close(wide[:, :13], expected.detach())
    assert wide[:, 13:].isnan().all()


def test_streamed_chunks_on_the_cpu_are_cache_sized(monkeypatch):
    """With no budget given, vocabulary chunks that are streamed (the logits pass the chunk
    budget, patched to 28, and no row block of the minimum fits) hold at most
    STREAMED_CHUNK_ELEMENTS logits, patched to 6: two classes of 3 rows. Values and gradients
    against brute force; an explicit budget is used as given."""
    monkeypatch.setattr(functional, "DEFAULT_CHUNK_ELEMENTS", 28)
    monkeypatch.setattr(functional, "STREAMED_CHUNK_ELEMENTS", 6)
    widths = []
    original = functional._class_major_logits
    monkeypatch.setattr(
        functional,
        "_class_major_logits",
        lambda h, w, b, start, stop, **kw: widths.append(stop - start) or original(h, w, b, start, stop, **kw),
    )
    generator = torch.Generator().manual_seed(6)
    hidden = torch.randn(3, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(14, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    target = torch.tensor([0, 5, 13])
    log_z, logit = chunked_logsumexp(hidden, weight, None, target)
    (log_z - logit).mean().backward()
    assert max(widths) == 2
    assert_equals_cross_entropy(hidden, weight, target, (log_z - logit).mean())
    widths.clear()
    chunked_logsumexp(hidden.detach(), weight.detach(), None, target, max_chunk_elements=28)
    assert max(widths) == 9
