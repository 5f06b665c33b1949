"""Each compiled kernel a layer calls is a ``bigvocab::`` custom operator: its schema, fake
(meta) implementation and autograd formula pass ``torch.library.opcheck``, and it runs on the
meta device, giving shapes and dtypes without data."""

from __future__ import annotations

import pytest
import torch

from bigvocab.kernels import ids  # noqa: F401 (registers bigvocab::distinct_ids)
from bigvocab.kernels.pairs import group_pairs
from bigvocab.kernels.trees import binary_leaf_log_probs


def _pairs(dtype: torch.dtype, requires_grad: bool):
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(5, 4, dtype=dtype, generator=generator, requires_grad=requires_grad)
    table = torch.randn(3, 4, dtype=dtype, generator=generator, requires_grad=requires_grad)
    example = torch.tensor([0, 0, 1, 2, 4, 4, 4])
    row = torch.tensor([2, 0, 0, 1, 2, 2, 0])  # repeats, and example 3 names no row
    return hidden, table, example, row


def _op_cases() -> list:
    cases = []
    for dtype in (torch.float64, torch.float32):
        hidden, table, example, row = _pairs(dtype, requires_grad=True)
        offsets, order = group_pairs(row, table.shape[0])
        grad = torch.randn(example.shape[0], dtype=dtype)
        # A tree 0 -> (1, leaf 2), 1 -> (leaf 0, leaf 1): children as unified ids (nodes, then leaves).
        children = torch.tensor([[1, 4], [2, 3]])
        logits = torch.randn(3, 2, dtype=dtype)
        softplus = torch.nn.functional.softplus(logits) if dtype == torch.float64 else logits.new_empty(0, 2)
        for name, args in [
            ("pair_dots", (hidden, table, example, row, offsets, order)),
            ("pair_dots_hidden_grad", (grad, table.detach(), example, row, hidden.shape[0])),
            ("pair_dots_table_grad", (grad, hidden.detach(), example, offsets, order, table.shape[0])),
            ("binary_tree_pass", (logits, softplus, children, logits.new_empty(3, 3), 1)),
        ]:
            cases.append(pytest.param(name, args, id=f"{name}-{str(dtype)[6:]}"))
    cases.append(pytest.param("group_pairs", (torch.tensor([2, 0, 0, 1, 2]), 4), id="group_pairs"))
    # U, the number of distinct ids, is known only when the op runs: a size the fake gives unbacked.
    cases.append(pytest.param("distinct_ids", (torch.tensor([5, 1, 5, 3, 1, 0]), 7), id="distinct_ids"))
    # The general pass: node 0 -> (reference leaf 0, leaf 1, node 1), node 1 -> (leaf 2, leaf 3).
    children = torch.tensor([2, 3, 1, 4, 5])
    offsets, leaf_runs = torch.tensor([0, 3, 5]), torch.tensor([-1, 2])
    logits = torch.randn(2, 3)
    general = (logits, children, offsets, leaf_runs, logits.new_empty(2, 4), 1)
    cases.append(pytest.param("general_tree_pass", general, id="general_tree_pass"))
    return cases


@pytest.mark.parametrize("name, args", _op_cases())
def test_custom_op_passes_opcheck(name, args):
    torch.library.opcheck(getattr(torch.ops.bigvocab, name), args)


def test_every_bigvocab_op_is_checked():
    checked = {case.values[0] for case in _op_cases()}
    assert set(torch.ops.bigvocab) == checked


def test_ops_give_shapes_on_the_meta_device():
    hidden, table, example, row = (t.to("meta") for t in _pairs(torch.float32, requires_grad=False))
    offsets, order = group_pairs(row, table.shape[0])
    assert offsets.shape == (4,) and order.shape == (7,)
    scores = torch.ops.bigvocab.pair_dots(hidden, table, example, row, offsets, order)
    assert scores.shape == (7,) and scores.dtype == torch.float32 and scores.device.type == "meta"
    out = binary_leaf_log_probs(
        torch.empty(3, 16, device="meta"), torch.tensor([[1, 4], [2, 3]], device="meta"), threads=1
    )
    assert out.shape == (3, 3) and out.device.type == "meta"
