"""Multi-label targets (N, T) padded with -1, run over every registered layer: exact ``log_prob``
per positive, the uniform mixture over a row's positives (against brute force where the loss is
exact, against the layer's own single-label loss on the flattened pairs where it is an
estimate), one positive per row equal to the single-label loss, and clear errors on bad targets."""

from __future__ import annotations

import pytest
import torch

import bigvocab

V, H = 19, 5
TARGET = torch.tensor([[0, 3, -1], [1, -1, -1], [2, 2, 5], [-1, 18, 7]])
N = TARGET.shape[0]
#: Layers whose training loss is the exact negative log-likelihood (their mixture is checked
#: against the exact log-probabilities; the others against their own per-pair loss).
EXACT = {"full", "hsm", "dsoftmax", "adaptive", "char"}


def side_data() -> dict:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return {
        "counts": [500.0 / (i + 1) for i in range(V)],
        "words": [letters[i % 26] + letters[(3 * i) % 26] * (1 + i % 2) + str(i) for i in range(V)],
        "vectors": torch.randn(V, 3, generator=torch.Generator().manual_seed(4)),
    }


def build(name: str) -> bigvocab.OutputLayer:
    torch.manual_seed(1)
    small = {"char_dim": 4, "filters": ((1, 3), (2, 3)), "correction_dim": 3} if name == "cnn" else {}
    layer = bigvocab.create_output(name, H, V, **side_data(), **small, dtype=torch.float64)
    with torch.no_grad():
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return layer


@pytest.fixture(params=bigvocab.list_outputs())
def layer(request):
    return build(request.param)


def hidden_states() -> torch.Tensor:
    return torch.randn(N, H, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_(True)


def test_log_prob_is_per_positive_and_zero_at_padding(layer):
    hidden = hidden_states()
    ours = layer.log_prob(hidden, TARGET)
    reference = layer.log_softmax(hidden).gather(1, TARGET.clamp_min(0)).masked_fill(TARGET < 0, 0.0)
    torch.testing.assert_close(ours, reference, atol=1e-9, rtol=1e-9)
    got = torch.autograd.grad(ours.sum(), hidden)[0]
    want = torch.autograd.grad(reference.sum(), hidden)[0]
    torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-7)


def test_one_positive_per_row_is_the_single_label_loss(layer):
    hidden = hidden_states()
    single = torch.tensor([0, 1, 2, 18])
    torch.manual_seed(9)
    per_row = layer.loss(hidden, single.unsqueeze(1), reduction="none")
    torch.manual_seed(9)
    torch.testing.assert_close(per_row, layer.loss(hidden, single, reduction="none"), atol=1e-12, rtol=1e-12)


def test_the_mixture_over_a_rows_positives(layer):
    """loss_i = (1/T_i) Σ_j loss(h_i, y_ij) over the valid positives (a label listed twice counts
    twice): the exact NLL's mixture for exact layers (plus the per-row penalty of selfnorm, and of
    infreq on its replayed rows), and for the others the layer's own single-label loss on the
    flattened pairs with the same draws. Layers whose positives share one candidate set (sampled,
    neg, bce, cnn) are checked by brute force in test_candidates."""
    name = type(layer).registered_name
    if layer.takes_negatives:
        pytest.skip("positives share the row's candidates: brute-forced in test_candidates.py")
    hidden = hidden_states()
    torch.manual_seed(9)
    ours = layer.loss(hidden, TARGET, reduction="none")
    rows, columns = (TARGET >= 0).nonzero(as_tuple=True)
    weight = 1.0 / (TARGET >= 0).sum(1).double()
    log_softmax = layer.log_softmax(hidden)
    if name in EXACT or name == "selfnorm":
        pair_loss = -log_softmax[rows, TARGET[rows, columns]]
    elif name == "infreq":  # -s_t per pair; the penalty per row, below
        pair_loss = -(log_softmax + layer.scorer.logits(hidden).logsumexp(1, keepdim=True))[rows, TARGET[rows, columns]]
    else:
        torch.manual_seed(9)
        pair_loss = layer.loss(hidden[rows], TARGET[rows, columns], reduction="none")
    reference = torch.zeros(N, dtype=torch.float64).index_add(0, rows, pair_loss * weight[rows])
    log_z = layer.scorer.logits(hidden).logsumexp(1) if name in ("selfnorm", "infreq") else None
    if name == "selfnorm":
        reference = reference + layer.alpha * log_z.square()
    if name == "infreq":  # the rows that pay the penalty: replay the layer's draw
        torch.manual_seed(9)
        chosen = max(1, round(layer.gamma * N))
        subset = torch.randperm(N)[:chosen]
        reference = reference.index_add(0, subset, layer.alpha * N / chosen * log_z[subset].square())
    torch.testing.assert_close(ours, reference, atol=1e-9, rtol=1e-9)
    got = torch.autograd.grad(ours.sum(), hidden)[0]
    want = torch.autograd.grad(reference.sum(), hidden)[0]
    torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-7)


def test_sequence_input(layer):
    hidden = torch.randn(2, 2, H, dtype=torch.float64)
    target = TARGET.reshape(2, 2, 3)
    assert layer.loss(hidden, target, reduction="none").shape == (2, 2)
    torch.testing.assert_close(
        layer.log_prob(hidden, target), layer.log_prob(hidden.reshape(N, H), TARGET).reshape(2, 2, 3)
    )


@pytest.mark.parametrize(
    "target, match",
    [
        (torch.tensor([[0, 1], [-1, -1], [2, 3], [4, 5]]), r"target row \(1,\) holds only -1 padding"),
        (torch.tensor([[0, 1], [2, -2], [2, 3], [4, 5]]), r"target id -2 is outside \[-1, 19\)"),
        (torch.tensor([[0, 1], [2, 19], [2, 3], [4, 5]]), r"target id 19 is outside \[-1, 19\)"),
        (torch.zeros(4, 0, dtype=torch.long), r"does not match hidden's leading shape"),
        (torch.zeros(3, 2, dtype=torch.long), r"expected \(4,\) \(or \(4, T\)"),
        (torch.tensor([0, -1, 2, 3]), r"target id -1 is outside \[0, 19\)"),
    ],
)
def test_bad_targets_are_named(target, match):
    layer = build("full")
    hidden = torch.randn(N, H, dtype=torch.float64)
    for call in (layer.loss, layer.log_prob):
        with pytest.raises(ValueError, match=match):
            call(hidden, target)


def test_self_normalised_score_takes_one_target_per_row():
    layer = build("selfnorm")
    with pytest.raises(ValueError, match="does not match"):
        layer.score(torch.randn(N, H, dtype=torch.float64), TARGET)
