"""The optimiser fused into the backward (``OutputLayer.fuse_optimizer``) against ``torch.optim``.

For every sparse layer and every fused method, three steps in float64 with repeated target ids,
an LR schedule and clipping must leave the weights and the optimiser state equal to the unfused
path -- ``torch.optim`` (or, for row-wise Adagrad, which torch lacks, the plain-torch reference
below) after ``clip_grad_norm`` of each sparse parameter alone -- to within :data:`ULPS` units in
the last place; a deliberately wrong update must fail the same comparison.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import bigvocab
from bigvocab.errors import ConfigError, UnknownNameError
from bigvocab.outputs.functional import gather_rows
from bigvocab.outputs.fused.adagrad import FusedAdagrad
from bigvocab.outputs.fused.rows import FusedRowOptimizer
from bigvocab.outputs.fused.sgd import FusedSGD
from bigvocab.train.optimizers import clip_grad_norm

V, H, N = 23, 5, 8
STEPS = 3
LR = 0.2
MAX_NORM = 0.05  # below the step gradients' norms here, so clipping acts

#: The comparisons allow this many units in the last place of float64 (relative to each element,
#: with the same floor for elements near zero): the compiled row kernels round a few of torch's
#: operations differently (measured: at most 1 ulp apart; SGD is bit for bit equal).
ULPS = 4
TOLERANCE = {"rtol": ULPS * torch.finfo(torch.float64).eps, "atol": ULPS * torch.finfo(torch.float64).eps}

#: Every layer whose training step gathers its rows sparsely (``infreq``'s step normalises over
#: every row, so its gradient is dense and it has nothing to fuse).
SPARSE_LAYERS = [name for name in bigvocab.list_outputs() if bigvocab.registry.OUTPUTS.get(name).sparse_grad]
#: Small CharCNN so that cnn's case runs in milliseconds.
SMALL_CNN = {"char_dim": 4, "filters": ((1, 3), (2, 3)), "correction_dim": 3}


class RowwiseAdagradReference(torch.optim.Optimizer):
    """Row-wise Adagrad in plain torch ops, from FBGEMM's definition: ``sum[r] += mean(g_r ** 2)``,
    ``w[r] -= lr g_r / (sqrt(sum[r]) + eps)`` on the rows of a coalesced sparse gradient."""

    def __init__(self, params, lr: float, eps: float = 1e-8) -> None:
        super().__init__(params, {"lr": lr, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["sum"] = param.new_zeros(param.shape[0])
                state["step"] += 1
                grad = param.grad.coalesce()
                rows, values = grad.indices()[0], grad.values().reshape(grad.values().shape[0], -1)
                state["sum"][rows] += values.pow(2).mean(1)
                scale = group["lr"] / (state["sum"][rows].sqrt() + group["eps"])
                param.view(param.shape[0], -1)[rows] -= scale.unsqueeze(1) * values


REFERENCES = {
    "sgd": lambda params, lr: torch.optim.SGD(params, lr=lr),
    "adagrad": lambda params, lr: torch.optim.Adagrad(params, lr=lr),
    "rowwise_adagrad": lambda params, lr: RowwiseAdagradReference(params, lr=lr),
    "sparse_adam": lambda params, lr: torch.optim.SparseAdam(params, lr=lr),
}


def build(name: str) -> bigvocab.OutputLayer:
    torch.manual_seed(3)
    counts = (1000 / torch.arange(1, V + 1, dtype=torch.float64)).round().long().tolist()
    words = [chr(97 + i % 26) * (1 + i % 3) + str(i) for i in range(V)]
    options: dict[str, Any] = SMALL_CNN if name == "cnn" else {}
    layer = bigvocab.create_output(name, H, V, counts=counts, words=words, dtype=torch.float64, **options)
    with torch.no_grad():  # no layer passes by symmetric (zero) initial weights
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return layer


def train(layer: bigvocab.OutputLayer, method: str, *, fused: bool, max_norm: float | None = MAX_NORM):
    """STEPS steps of ``layer`` with ``method`` on its sparse parameters (fused or torch's), SGD on
    the others, an LR halved every step; the same draws either way. Returns the optimiser."""
    sparse = layer.sparse_parameters()
    dense = [p for p in layer.parameters() if all(p is not q for q in sparse)]
    if fused:
        optimizer = layer.fuse_optimizer(method, lr=LR, max_norm=max_norm)
    else:
        optimizer = REFERENCES[method](sparse, LR)
    dense_optimizer = torch.optim.SGD(dense, lr=LR) if dense else None
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
    data = torch.Generator().manual_seed(11)
    for step in range(STEPS):
        hidden = torch.randn(N, H, generator=data, dtype=torch.float64)
        target = torch.tensor([1, 1, 0, 5, 5, 5, 2, 9])  # repeated ids
        torch.manual_seed(100 + step)  # the layers' draws
        for opt in (optimizer, dense_optimizer):
            if opt is not None:
                opt.zero_grad(set_to_none=True)
        layer.loss(hidden, target).backward()
        if not fused and max_norm is not None:
            for param in sparse:
                clip_grad_norm([param], max_norm)
        optimizer.step()
        if dense_optimizer is not None:
            dense_optimizer.step()
        schedule.step()
    return optimizer


def assert_same(fused_layer, fused_optimizer, reference_layer, reference_optimizer) -> None:
    for (name, got), (_, want) in zip(fused_layer.state_dict().items(), reference_layer.state_dict().items()):
        torch.testing.assert_close(got, want, **TOLERANCE, msg=lambda m, name=name: f"{name}: {m}")
    got_state = fused_optimizer.state_dict()["state"]
    want_state = reference_optimizer.state_dict()["state"]
    assert got_state.keys() == want_state.keys()
    for index, want in want_state.items():
        assert got_state[index].keys() == want.keys()
        for key, value in want.items():
            torch.testing.assert_close(torch.as_tensor(got_state[index][key]), torch.as_tensor(value), **TOLERANCE)


def check(name: str, method: str, max_norm: float | None = MAX_NORM) -> None:
    fused_layer, reference_layer = build(name), build(name)
    assert fused_layer.sparse_parameters(), f"{name} has no sparse parameters"
    fused_optimizer = train(fused_layer, method, fused=True, max_norm=max_norm)
    reference_optimizer = train(reference_layer, method, fused=False, max_norm=max_norm)
    assert all(p.grad is None for p in fused_layer.sparse_parameters())
    assert not torch.equal(fused_layer.sparse_parameters()[0], build(name).sparse_parameters()[0])  # it trained
    assert_same(fused_layer, fused_optimizer, reference_layer, reference_optimizer)


@pytest.mark.parametrize("method", list(REFERENCES))
def test_fused_equals_torch_optim_without_clipping(method):
    check("hsm", method, max_norm=None)


@pytest.mark.parametrize("method", list(REFERENCES))
@pytest.mark.parametrize("name", SPARSE_LAYERS)
def test_fused_equals_torch_optim_for_every_sparse_layer(name, method):
    check(name, method)


def test_a_wrong_update_is_caught(monkeypatch):
    """One element of one step off by 1e-12 (far above ULPS, far below anything a loss shows)."""
    apply_rows = FusedSGD.apply_rows

    def off_by_a_little(self, param, state, group, gradient):
        apply_rows(self, param, state, group, gradient)
        param.data.view(-1)[param[0].numel()] += 1e-12  # row 1's first element

    monkeypatch.setattr(FusedSGD, "apply_rows", off_by_a_little)
    with pytest.raises(AssertionError):
        check("neg", "sgd")


def test_a_parameter_gathered_twice_gets_one_update_of_the_summed_gradient():
    """Adagrad is not linear: two updates of the parts would differ from one of their sum."""
    torch.manual_seed(0)
    weight = nn.Parameter(torch.randn(V, H, dtype=torch.float64))
    reference = nn.Parameter(weight.detach().clone())
    first, second = torch.tensor([1, 4, 4, 7]), torch.tensor([7, 2, 1])
    fused = FusedAdagrad([weight], lr=LR)
    torch_adagrad = torch.optim.Adagrad([reference], lr=LR)
    upstream = torch.randn(7, H, dtype=torch.float64)
    for param in (weight, reference):
        rows = torch.cat([gather_rows(param, first), gather_rows(param, second)])
        (rows * upstream).sum().backward()
    torch_adagrad.step()
    fused.step()
    torch.testing.assert_close(weight, reference, **TOLERANCE)
    torch.testing.assert_close(fused.state[weight]["sum"], torch_adagrad.state[reference]["sum"], **TOLERANCE)


def test_state_dict_loads_into_torch_optim_and_back():
    fused_layer, reference_layer = build("neg"), build("neg")
    fused_optimizer = train(fused_layer, "sparse_adam", fused=True)
    torch_optimizer = torch.optim.SparseAdam(reference_layer.sparse_parameters(), lr=LR)
    torch_optimizer.load_state_dict(copy.deepcopy(fused_optimizer.state_dict()))
    assert torch_optimizer.state_dict()["state"].keys() == fused_optimizer.state_dict()["state"].keys()


def test_a_gradient_from_outside_the_fused_gather_is_refused():
    layer = build("neg")
    optimizer = layer.fuse_optimizer("sgd", lr=LR)
    weight = layer.sparse_parameters()[0]
    (weight.sum() + layer.loss(torch.randn(N, H, dtype=torch.float64), torch.arange(N))).backward()
    with pytest.raises(ConfigError, match="outside its fused update"):
        optimizer.step()


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("full", {}, "no sparse parameters"),
        ("neg", {"momentum": 0.9}, "does not take 'momentum'"),
        ("neg", {"lr": -1.0}, "lr must be"),
    ],
)
def test_bad_fusion_is_named(name, options, match):
    layer = bigvocab.create_output(name, H, V, counts=list(range(V, 0, -1)))
    with pytest.raises(ConfigError, match=match):
        layer.fuse_optimizer("sgd", **{"lr": LR, **options})


def test_an_unknown_method_is_named():
    with pytest.raises(UnknownNameError, match="unknown fused row optimizer 'adamm'; did you mean"):
        build("neg").fuse_optimizer("adamm", lr=LR)


@pytest.mark.parametrize(("method", "passes"), [("sgd", 0.0), ("adagrad", 2.0), ("sparse_adam", 4.0)])
def test_step_cost_counts_the_optimiser_state_of_the_touched_rows(method, passes):
    layer = build("neg")
    target = torch.arange(N)
    before = layer.step_cost(target)
    layer.fuse_optimizer(method, lr=LR)
    after = layer.step_cost(target)
    assert before == layer.train_cost(target) and before.gathered > 0
    rows_bytes = before.gathered / 3  # the step's three passes over its touched rows
    assert after.bytes == pytest.approx(before.bytes + passes * rows_bytes)
    assert after.gathered == pytest.approx(before.gathered + passes * rows_bytes)


def one_pass_case(monkeypatch, name: str, method: str, losses: int) -> int:
    """``method`` without clipping on ``name`` with many distinct draws (the pair kernel path),
    fused against torch's; ``losses`` losses of the layer summed in one graph. Returns how many
    times a row update ran straight from the pairs (one pass)."""
    one_passes = []
    update_from_pairs = FusedRowOptimizer.update_from_pairs

    def counted(self, param, gradient):
        done = update_from_pairs(self, param, gradient)
        one_passes.append(done)
        return done

    monkeypatch.setattr(FusedRowOptimizer, "update_from_pairs", counted)
    layers = []
    for fused in (True, False):
        torch.manual_seed(3)
        counts = (1000 / torch.arange(1, 201, dtype=torch.float64)).round().long().tolist()
        layer = bigvocab.create_output(name, H, 200, counts=counts, dtype=torch.float64, **_few_draws(name))
        sparse = layer.sparse_parameters()
        optimizer = layer.fuse_optimizer(method, lr=LR) if fused else REFERENCES[method](sparse, LR)
        dense = [p for p in layer.parameters() if all(p is not q for q in sparse)]
        data = torch.Generator().manual_seed(5)
        for step in range(STEPS):
            hidden = torch.randn(64, H, generator=data, dtype=torch.float64)
            target = torch.randint(0, 200, (64,), generator=data)
            target[1::2] = target[::2]  # repeated ids
            torch.manual_seed(100 + step)
            optimizer.zero_grad(set_to_none=True)
            for param in dense:
                param.grad = None
            sum(layer.loss(hidden, target) for _ in range(losses)).backward()
            optimizer.step()
            with torch.no_grad():
                for param in dense:
                    param -= LR * param.grad
        layers.append((layer, optimizer))
    assert_same(*layers[0], *layers[1])
    return sum(one_passes)


def _few_draws(name: str) -> dict:
    return {} if name == "hsm" else {"num_samples": 1}


@pytest.mark.parametrize("method", list(REFERENCES))
@pytest.mark.parametrize("name", ["neg", "nce", "hsm"])
def test_the_one_pass_pair_kernel_update_equals_torch_optim(monkeypatch, name, method):
    assert one_pass_case(monkeypatch, name, method, losses=1) == STEPS


def test_a_parameter_read_twice_takes_the_summed_update_not_the_one_pass(monkeypatch):
    assert one_pass_case(monkeypatch, "hsm", "adagrad", losses=2) == 0


def test_a_dropped_or_released_optimizer_leaves_the_rows_to_torch_optim():
    import gc

    layer = build("neg")
    layer.fuse_optimizer("sgd", lr=LR).release()
    layer.loss(torch.randn(N, H, dtype=torch.float64), torch.arange(N)).backward()
    assert layer.sparse_parameters()[0].grad is not None
    layer = build("neg")
    layer.fuse_optimizer("sgd", lr=LR)
    layer.fused_optimizer = None
    gc.collect()
    layer.loss(torch.randn(N, H, dtype=torch.float64), torch.arange(N)).backward()
    assert layer.sparse_parameters()[0].grad is not None


def test_a_loaded_state_keeps_the_update_fused():
    layer = build("neg")
    optimizer = layer.fuse_optimizer("adagrad", lr=LR)
    optimizer.load_state_dict(train(build("neg"), "adagrad", fused=True).state_dict())
    layer.loss(torch.randn(N, H, dtype=torch.float64), torch.arange(N)).backward()
    assert layer.sparse_parameters()[0].grad is None and float(optimizer.state_dict()["state"][0]["step"]) == 4


@pytest.mark.parametrize("name", ["neg", "nce", "hsm"])
def test_the_one_pass_update_gives_the_hidden_states_the_gradient_of_the_rows_before_it(monkeypatch, name):
    """The one-pass kernel forms the hidden states' gradient in the same pass that steps the rows
    (summed in row order): it must equal the unfused path's, from the rows the forward read."""
    one_passes = []
    update_from_pairs = FusedRowOptimizer.update_from_pairs
    monkeypatch.setattr(
        FusedRowOptimizer, "update_from_pairs", lambda *a: one_passes.append(update_from_pairs(*a)) or one_passes[-1]
    )
    counts = (1000 / torch.arange(1, 201, dtype=torch.float64)).round().long().tolist()
    data = torch.Generator().manual_seed(6)
    hidden = torch.randn(64, H, generator=data, dtype=torch.float64)
    target = torch.randint(0, 200, (64,), generator=data)
    grads = []
    for fused in (True, False):
        torch.manual_seed(3)
        layer = bigvocab.create_output(name, H, 200, counts=counts, dtype=torch.float64, **_few_draws(name))
        with torch.no_grad():  # neg's rows start at zero, which would give the hidden states none
            layer.sparse_parameters()[0].add_(torch.randn_like(layer.sparse_parameters()[0]))
        if fused:
            layer.fuse_optimizer("sgd", lr=LR)
        leaf = hidden.clone().requires_grad_()
        torch.manual_seed(100)
        layer.loss(leaf, target).backward()
        grads.append(leaf.grad)
    assert one_passes == [True]
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)
