"""``torch.compile`` of every registered layer (and its declared variants, as the contract suite
builds them): the training loss and its gradients, ``log_softmax`` and ``topk`` compiled as a
new user would, ``torch.compile(lambda h, y: layer.loss(h, y))``, equal eager to rounding.

The compiled calls go through AOTAutograd (backend ``aot_eager``): the custom operators' fake
implementations give the shapes and their autograd formulas the backward graph, without the
minutes inductor's C++ compiler would take over the registry; one inductor case is slow-marked.
Graph breaks are allowed (input validation reads ids, sparse gradients stay outside the graph);
the counter checks that Dynamo did compile something. Sampling layers draw from the global
generator, seeded identically for both calls: ``aot_eager`` keeps the eager random stream.
"""

from __future__ import annotations

import os

import pytest
import test_contract as contract
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend
from torch.fx.experimental.proxy_tensor import make_fx

#: Compiled against eager: the same operations, maybe fused or reordered, so a few dozen ulp.
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}


def _build(name: str, options: dict, dtype: torch.dtype):
    layer = contract.build(name, options, dtype)
    with torch.no_grad():  # as the contract suite: no layer passes by symmetric initial weights
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return layer.train()


def _loss_cases() -> list[tuple[str, dict]]:
    """Each registered layer at its defaults; with ``BIGVOCAB_COMPILE_VARIANTS=1``, every contract
    case (each layer's trees, scorers and candidate sources): a compile takes seconds, and the
    whole matrix would add minutes to every CI run."""
    return contract._cases() if os.environ.get("BIGVOCAB_COMPILE_VARIANTS") == "1" else _defaults()


def _defaults() -> list[tuple[str, dict]]:
    """Each registered layer once, at its defaults (its first contract case)."""
    defaults: dict[str, dict] = {}
    for name, options in contract._cases():
        defaults.setdefault(name, options)
    return list(defaults.items())


def _compile(function, backend: str = "aot_eager"):
    """``function`` compiled afresh (each test's layer would otherwise recompile the same code
    object, up to Dynamo's cache limit, then silently run eagerly), and the frames it compiled."""
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    return torch.compile(function, backend=counter), counter


def _loss_and_grads(layer, loss, hidden, target):
    torch.manual_seed(11)
    value = loss(hidden, target)
    params = [p for p in layer.parameters() if p.requires_grad]
    grads = torch.autograd.grad(value, [hidden, *params], allow_unused=True)
    return value, [None if g is None else g.to_dense() for g in grads]


def _assert_loss_matches_eager(layer, backend: str = "aot_eager"):
    dtype = next(layer.parameters()).dtype
    tol = TOLERANCE[dtype]
    hidden = torch.randn(8, contract.H, dtype=dtype, requires_grad=True)
    target = torch.arange(8) * 7 % contract.V
    compiled, counter = _compile(lambda h, y: layer.loss(h, y), backend)
    got, got_grads = _loss_and_grads(layer, compiled, hidden, target)
    want, want_grads = _loss_and_grads(layer, lambda h, y: layer.loss(h, y), hidden, target)
    assert counter.frame_count > 0
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)
    for g, w in zip(got_grads, want_grads, strict=True):
        assert (g is None) == (w is None)
        if g is not None:
            torch.testing.assert_close(g, w, atol=tol, rtol=100 * tol)


@pytest.mark.slow
@pytest.mark.parametrize("case", _loss_cases(), ids=contract._case_id)
def test_compiled_loss_and_gradients_equal_eager(case):
    """In float64, where rounding differences cannot hide a wrong gradient; float32 takes the same
    graph (the operators' opcheck runs both dtypes, and the inductor case below is float32)."""
    _assert_loss_matches_eager(_build(*case, torch.float64))


@pytest.mark.slow
@pytest.mark.parametrize("case", _defaults(), ids=contract._case_id)
def test_compiled_log_softmax_and_topk_equal_eager(case):
    """Each registered layer at its defaults: the exact evaluation paths share the scorers and
    tree passes across a layer's variants."""
    layer = _build(*case, torch.float64).eval()
    tol = TOLERANCE[torch.float64]
    hidden = torch.randn(5, contract.H, dtype=torch.float64)
    compiled, counter = _compile(lambda h: (layer.log_softmax(h), layer.topk(h, 4)))
    log_p, (values, ids) = compiled(hidden)
    assert counter.frame_count > 0
    torch.testing.assert_close(log_p, layer.log_softmax(hidden), atol=tol, rtol=tol)
    want_values, want_ids = layer.topk(hidden, 4)
    torch.testing.assert_close(values, want_values, atol=tol, rtol=tol)
    # Ids must agree wherever the values are not tied.
    distinct = torch.cat([want_values[:, :-1] - want_values[:, 1:] > tol, torch.ones(5, 1, dtype=torch.bool)], 1)
    assert torch.equal(ids[distinct], want_ids[distinct])


@pytest.mark.slow
def test_inductor_compiles_the_tree_loss():
    """The C++ backend too, on the layer whose kernels Dynamo could not trace before they were operators."""
    _assert_loss_matches_eager(_build("hsm", {"tree": "huffman"}, torch.float32), backend="inductor")


def test_fx_sees_the_kernels_as_operators():
    """make_fx records the numba kernels as ``bigvocab::`` nodes (an opaque Python call would have
    left only the empty output buffer in the graph), and the graph replays the loss and its gradient."""
    layer = _build("hsm", {"tree": "huffman"}, torch.float64)
    target = torch.arange(8) * 7 % contract.V

    def loss_and_grad(hidden):
        loss = layer.loss(hidden, target)
        return loss, torch.autograd.grad(loss, hidden)[0]

    hidden = torch.randn(8, contract.H, dtype=torch.float64, requires_grad=True)
    # The layer reads its ids (validation, path lengths): a real-mode trace burns their values in,
    # as it does the target's, instead of refusing every read of a value.
    graph = make_fx(loss_and_grad, _error_on_data_dependent_ops=False)(hidden)
    called = {str(node.target) for node in graph.graph.nodes if node.op == "call_function"}
    assert {"bigvocab.pair_dots.default", "bigvocab.pair_dots_hidden_grad.default"} <= called
    for got, want in zip(graph(hidden), loss_and_grad(hidden), strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
