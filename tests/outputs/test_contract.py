"""The OutputLayer contract, run over every registered layer and every (objective, scorer) pair
the objective-based layers allow (timm-style: a layer or scorer is tested the moment it is
registered).

On a small vocabulary, each layer built with ``dtype=`` float64 and float32 (and ``device="cuda"``
where there is one) must be built there, give a normalised ``log_softmax``, a ``log_prob`` equal
to it gathered (values and gradients), an exact ``topk``, a finite differentiable training loss
whose reductions agree, (B, T, H) input, clear errors on bad input (wrong dtype, empty batch...),
and a state_dict that reproduces it.
"""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.outputs.factory import list_scorers

V, H = 37, 6

#: Options tested besides each layer's defaults and its declared ``variants`` (hsm's trees...).
EXTRA_CASES: dict[str, list[dict]] = {
    "sampled": [
        {"shared": False},
        {"remove_accidental_hits": False},
        {"candidates": "in_batch"},
        {"candidates": "mixed", "shared": False},
        {"temperature": 0.5},
    ],
    "neg": [{"candidates": "in_batch"}],
    "bce": [{"candidates": "mixed", "shared": False}],
    "nce": [{"normaliser": "learned"}],
    "char": [{"constrained": False}, {"cell": "gru"}],
}


#: Small CharCNN so that the cnn scorer's cases run in milliseconds.
SMALL_CNN = {"char_dim": 4, "filters": ((1, 3), (2, 3), (3, 2)), "correction_dim": 3}


def _scorer_options(scorer: str) -> dict:
    return {"scorer": scorer, **(SMALL_CNN if scorer == "cnn" else {})}


def _cases() -> list[tuple[str, dict]]:
    cases = []
    for name in bigvocab.list_outputs():
        layer_class = bigvocab.registry.OUTPUTS.get(name)
        default = getattr(layer_class, "default_scorer", None)
        small = SMALL_CNN if default == "cnn" else {}
        cases.append((name, small))
        options = [*layer_class.variants.values(), *EXTRA_CASES.get(name, [])]
        cases.extend((name, {**small, **option}) for option in options if option)
        if "scorer" in layer_class.accepted_options({}):
            cases.extend((name, _scorer_options(s)) for s in list_scorers() if s != default)
    return cases


def _case_id(case) -> str:
    name, options = case
    return name + "".join(f"[{k}={v}]" for k, v in options.items() if k not in SMALL_CNN)


def _side_data() -> dict:
    """What some layers need besides H and V: frequencies, spellings, word vectors."""
    generator = torch.Generator().manual_seed(7)
    ranks = torch.arange(1, V + 1, dtype=torch.float64)
    counts = (10_000 / ranks).round().long().tolist()
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [letters[i % 26] + letters[(i * 7) % 26] * (1 + i % 3) + str(i) for i in range(V)]
    vectors = torch.randn(V, 4, generator=generator)
    return {"counts": counts, "words": words, "vectors": vectors}


#: (dtype, device) of the matrix; float64 first, where round-off cannot hide a wrong formula.
PLACES = [(torch.float64, "cpu"), (torch.float32, "cpu")]
if torch.cuda.is_available():
    PLACES += [(torch.float64, "cuda"), (torch.float32, "cuda")]

#: Tolerance of "exact" comparisons per dtype: round-off of a few dozen operations.
TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-5}


def build(name: str, options: dict, dtype: torch.dtype = torch.float64, device: str = "cpu") -> bigvocab.OutputLayer:
    torch.manual_seed(3)
    return bigvocab.create_output(name, H, V, **_side_data(), **options, dtype=dtype, device=device)


@pytest.fixture(params=PLACES, ids=lambda place: f"{str(place[0])[6:]}-{place[1]}")
def place(request):
    return request.param


@pytest.fixture(params=_cases(), ids=_case_id)
def layer(request, place):
    name, options = request.param
    built = build(name, options, *place)
    built.contract_case = (name, options, *place)
    # Perturb every parameter so that no layer passes by having symmetric (e.g. zero) initial weights.
    with torch.no_grad():
        for param in built.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return built


def _where(layer) -> dict:
    param = next(layer.parameters())
    return {"dtype": param.dtype, "device": param.device}


def _tolerance(layer) -> float:
    return TOLERANCE[next(layer.parameters()).dtype]


def _inputs(layer, n: int = 5):
    hidden = torch.randn(n, H, **_where(layer))
    target = (torch.arange(n) * 7 % V).to(_where(layer)["device"])
    return hidden, target


def test_built_in_the_dtype_and_on_the_device_asked(layer):
    _, _, dtype, device = layer.contract_case
    for tensor in [*layer.parameters(), *(b for b in layer.buffers() if b.is_floating_point())]:
        assert tensor.device.type == device
    assert all(p.dtype == dtype for p in layer.parameters())
    sampler = getattr(layer, "sampler", None)
    if sampler is not None:
        assert sampler.device.type == device and sampler.dtype == dtype


def test_log_softmax_is_normalised(layer):
    hidden, _ = _inputs(layer)
    log_p = layer.log_softmax(hidden)
    assert log_p.shape == (5, V)
    torch.testing.assert_close(log_p.logsumexp(1), torch.zeros(5, **_where(layer)), atol=_tolerance(layer), rtol=0)


def test_log_prob_equals_gathered_log_softmax(layer):
    hidden, target = _inputs(layer)
    hidden.requires_grad_(True)
    tol = _tolerance(layer)
    ours = layer.log_prob(hidden, target)
    reference = layer.log_softmax(hidden).gather(1, target[:, None]).squeeze(1)
    torch.testing.assert_close(ours, reference, atol=tol, rtol=tol)
    params = [p for p in layer.parameters() if p.requires_grad]
    got = torch.autograd.grad(ours.sum(), [hidden, *params], allow_unused=True)
    want = torch.autograd.grad(reference.sum(), [hidden, *params], allow_unused=True)
    for g, w in zip(got, want):
        if g is None or w is None:
            assert (g is None or not g.to_dense().any()) and (w is None or not w.to_dense().any())
            continue
        torch.testing.assert_close(g.to_dense(), w.to_dense(), atol=tol, rtol=100 * tol)


def test_topk_is_exact(layer):
    hidden, _ = _inputs(layer)
    tol = _tolerance(layer)
    for k in (1, 4, V):
        values, ids = layer.topk(hidden, k)
        ref_values, ref_ids = layer.log_softmax(hidden).topk(k, dim=1)
        torch.testing.assert_close(values, ref_values, atol=tol, rtol=tol)
        # Ids must agree wherever the values are not tied.
        gaps = ref_values[:, :-1] - ref_values[:, 1:]
        distinct = torch.cat([gaps > tol, torch.ones(ids.shape[0], 1, dtype=torch.bool, device=gaps.device)], 1)
        assert torch.equal(ids[distinct], ref_ids[distinct])


def test_training_loss_is_finite_differentiable_and_reductions_agree(layer):
    layer.train()
    hidden, target = _inputs(layer, 8)
    hidden.requires_grad_(True)
    torch.manual_seed(11)
    per_example = layer.loss(hidden, target, reduction="none")
    assert per_example.shape == (8,)
    assert torch.isfinite(per_example).all()
    per_example.sum().backward()
    assert hidden.grad is not None and torch.isfinite(hidden.grad).all()
    touched = [p.grad for p in layer.parameters() if p.grad is not None]
    assert touched, "the training loss reached no parameter of the layer"
    for grad in touched:
        assert torch.isfinite(grad.coalesce().values() if grad.is_sparse else grad).all()
    torch.manual_seed(11)
    total = layer.loss(hidden, target, reduction="sum")
    torch.manual_seed(11)
    mean = layer.loss(hidden, target, reduction="mean")
    torch.testing.assert_close(total, per_example.sum())
    torch.testing.assert_close(mean, per_example.mean())


def test_batched_sequence_input(layer):
    hidden = torch.randn(2, 3, H, **_where(layer))
    target = torch.randint(0, V, (2, 3), device=_where(layer)["device"])
    assert layer.log_prob(hidden, target).shape == (2, 3)
    assert layer.log_softmax(hidden).shape == (2, 3, V)
    values, ids = layer.topk(hidden, 2)
    assert values.shape == ids.shape == (2, 3, 2)
    flat = layer.log_prob(hidden.reshape(6, H), target.reshape(6)).reshape(2, 3)
    torch.testing.assert_close(layer.log_prob(hidden, target), flat)
    assert layer.loss(hidden, target, reduction="none").shape == (2, 3)


@pytest.mark.parametrize(
    "hidden_shape, target, match",
    [
        ((4, H + 1), torch.zeros(4, dtype=torch.long), "in_features"),
        ((4, H), torch.zeros(5, dtype=torch.long), "does not match"),
        ((4, H), torch.zeros(4), "integer class ids"),
        ((4, H), torch.full((4,), V), "outside"),
        ((4, H), torch.full((4,), -1), "outside"),
        ((H,), torch.zeros((), dtype=torch.long), r"\(N, H\)"),
        ((0, H), torch.zeros(0, dtype=torch.long), "empty batch"),
        ((2, 0, H), torch.zeros(2, 0, dtype=torch.long), "empty batch"),
    ],
)
def test_bad_input_is_named(layer, hidden_shape, target, match):
    if layer.contract_case[3] != "cpu" and match == "outside":
        pytest.skip("ids are range-checked on the device, asynchronously")
    with pytest.raises((ValueError, TypeError), match=match):
        layer.loss(torch.randn(*hidden_shape, **_where(layer)), target.to(_where(layer)["device"]))


def test_hidden_in_another_dtype_is_named(layer):
    hidden, target = _inputs(layer)
    other = torch.float32 if hidden.dtype == torch.float64 else torch.float64
    for call in (lambda h: layer.loss(h, target), lambda h: layer.log_prob(h, target), layer.log_softmax):
        with pytest.raises(TypeError, match=f"hidden is {other}.*layer's parameters are {hidden.dtype}"):
            call(hidden.to(other))


def test_bad_k_is_named(layer):
    hidden, _ = _inputs(layer)
    with pytest.raises(bigvocab.ConfigError, match="exceeds"):
        layer.topk(hidden, V + 1)
    with pytest.raises(bigvocab.ConfigError, match="positive"):
        layer.topk(hidden, 0)


def test_state_dict_round_trip(layer):
    fresh = build(*layer.contract_case)
    fresh.load_state_dict(layer.state_dict())
    hidden, target = _inputs(layer)
    layer.eval()
    fresh.eval()
    torch.testing.assert_close(fresh.log_prob(hidden, target), layer.log_prob(hidden, target))


def test_every_layer_is_registered_and_listed():
    names = bigvocab.list_outputs()
    assert "full" in names
    assert len(names) == len(set(names))
