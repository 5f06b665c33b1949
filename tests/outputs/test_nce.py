"""Noise-contrastive estimation: the loss against a brute-force loop, the learned normaliser, and
a gradient that approaches the maximum-likelihood gradient as k grows when log Z is right."""

from __future__ import annotations

import math

import pytest
import torch
from reference_checks import assert_mean_exceeds

import bigvocab
from bigvocab.errors import ConfigError

V, H, N = 30, 4, 5


def zipf_counts(size: int) -> list[float]:
    return [1000.0 / (i + 1) for i in range(size)]


def log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x > 0 else x - math.log1p(math.exp(x))


@pytest.mark.parametrize("options", [{}, {"shared": True}, {"normaliser": "learned", "log_z": 2.0}, {"log_z": -1.5}])
def test_loss_matches_brute_force(options):
    torch.manual_seed(0)
    layer = bigvocab.create_output("nce", H, V, counts=zipf_counts(V), num_samples=7, **options)
    hidden, target = torch.randn(N, H), torch.tensor([0, 3, 3, 12, 29])
    torch.manual_seed(2)
    ours = layer.loss(hidden, target, reduction="none")
    torch.manual_seed(2)
    noise = layer.sampler.sample(7) if layer.shared else layer.sampler.sample(N * 7).reshape(N, 7)
    q = layer.sampler.log_q(torch.arange(V)).double().exp()
    log_z = float(layer.log_z)

    def delta(n: int, i: int) -> float:
        score = float(hidden[n].double() @ layer.weight[i].double() + layer.bias[i])
        return score - log_z - math.log(7 * float(q[i]))

    for n in range(N):
        row = noise if noise.dim() == 1 else noise[n]
        expected = -log_sigmoid(delta(n, int(target[n]))) - sum(log_sigmoid(-delta(n, int(y))) for y in row)
        assert float(ours[n]) == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_learned_normaliser_is_trained():
    layer = bigvocab.create_output("nce", H, V, counts=zipf_counts(V), normaliser="learned")
    assert isinstance(layer.log_z, torch.nn.Parameter)
    layer.loss(torch.randn(N, H), torch.randint(0, V, (N,))).backward()
    assert layer.log_z.grad is not None and float(layer.log_z.grad) != 0
    fixed = bigvocab.create_output("nce", H, V, counts=zipf_counts(V))
    assert "log_z" not in dict(fixed.named_parameters()) and "log_z" in fixed.state_dict()


def nce_errors(k: int, repetitions: int) -> torch.Tensor:
    """Relative error |g_nce - g| / |g| of the NCE gradient against the exact NLL gradient g for
    one example, with the fixed normaliser set to that example's true log Z (so that
    p = exp(s - log Z) is normalised), per repetition."""
    num_classes = 512
    counts = zipf_counts(num_classes)
    generator = torch.Generator().manual_seed(0)
    full = bigvocab.create_output("full", 16, num_classes)
    with torch.no_grad():
        full.weight.normal_(generator=generator)
        full.bias.copy_(torch.tensor(counts).log())
    hidden = torch.randn(1, 16, generator=generator) * 0.3
    target = torch.tensor([3])
    with torch.no_grad():
        log_z = float(torch.logsumexp(full.logits(hidden), dim=1))
    layer = bigvocab.create_output("nce", 16, num_classes, counts=counts, num_samples=k, log_z=log_z)
    layer.load_state_dict(full.state_dict(), strict=False)  # weights only; the layer keeps its log Z

    def gradient(module):
        module.zero_grad()
        h = hidden.clone().requires_grad_(True)
        module.loss(h, target).backward()
        return torch.cat([module.weight.grad.to_dense().flatten(), module.bias.grad.to_dense(), h.grad.flatten()])

    exact = gradient(full)
    torch.manual_seed(k)
    return torch.stack([(gradient(layer) - exact).norm() / exact.norm() for _ in range(repetitions)])


def test_gradient_approaches_maximum_likelihood_as_k_grows():
    """NCE's gradient is -(1 - σ(Δ_t)) ∇s_t + Σ_j σ(Δ_j) ∇s_j; with log Z exact, σ(Δ_t) -> 0 and the
    noise sum is a k-sample estimate of Σ_w p_w ∇s_w, so the error falls like 1/sqrt(k). (With one
    example the target term dominates and the cosine is already ~0.97 at k = 16, so the relative
    error is the sharper statistic.) Its mean over 60 repetitions must fall from k = 16 to 64 to
    256 by more than 3 standard errors of the difference (one-sided 1.3e-3 under equal means)."""
    repetitions = 60
    errors = {k: nce_errors(k, repetitions) for k in (16, 64, 256)}
    for small, large in ((16, 64), (64, 256)):
        a, b = errors[small], errors[large]
        assert_mean_exceeds(a, b, 3, (small, large, float(a.mean()), float(b.mean())))
    assert float(errors[256].mean()) < 0.1


def test_options_are_checked():
    with pytest.raises(ConfigError, match="normaliser must be one of"):
        bigvocab.create_output("nce", H, V, counts=zipf_counts(V), normaliser="estimated")
    with pytest.raises(ConfigError, match="log_z"):
        bigvocab.create_output("nce", H, V, counts=zipf_counts(V), log_z=float("nan"))
    assert bigvocab.create_output("nce", H, V, counts=zipf_counts(V)).num_samples == 25
    assert bigvocab.create_output("nce", H, 10, sampler="uniform").num_samples == 9


def test_bias_starts_at_minus_log_v_so_the_normaliser_starts_near_one():
    """Zoph et al. 2016: with b = -log V and small weights, Z = Σ_w exp(s_w) is about 1 at the start
    (each exp(h·w_w) has mean about 1), not about V as from a zero bias."""
    torch.manual_seed(0)
    layer = bigvocab.create_output("nce", H, 1000, counts=zipf_counts(1000))
    assert torch.allclose(layer.bias, torch.full((1000,), -math.log(1000)))
    log_z = torch.logsumexp(layer.logits(torch.randn(64, H)), dim=1)
    assert float(log_z.abs().max()) < math.log(2)


def test_fixed_normaliser_learns_a_self_normalised_unigram_model():
    """With a constant hidden state the model is softmax(b); NCE with Z fixed at 1 must drive
    exp(b) towards the data distribution p itself (Mnih & Teh 2012), so the exact cross-entropy
    approaches the entropy H(p) and log Σ exp(b) approaches 0. The bounds are loose on purpose
    (half the gap from the uniform start, and |log Z| < 0.1): the final noise of the estimate at
    this step size is far smaller than either."""
    num_classes = 30
    counts = zipf_counts(num_classes)
    p = torch.tensor(counts) / sum(counts)
    entropy = float(-(p * p.log()).sum())
    torch.manual_seed(0)
    layer = bigvocab.create_output("nce", H, num_classes, counts=counts, num_samples=10, bias=True)
    with torch.no_grad():
        layer.weight.zero_()
    optimiser = torch.optim.SparseAdam([layer.bias], lr=0.05)
    for _ in range(400):
        target = torch.multinomial(p, 64, replacement=True)
        optimiser.zero_grad()
        layer.loss(torch.zeros(64, H), target).backward()
        optimiser.step()
    with torch.no_grad():
        cross_entropy = float(-(p * torch.log_softmax(layer.bias, 0)).sum())
        log_z = float(torch.logsumexp(layer.bias, 0))
    assert cross_entropy < (entropy + math.log(num_classes)) / 2, (cross_entropy, entropy)
    assert abs(log_z) < 0.1, log_z


def test_gradient_is_mnih_and_tehs():
    """Mnih & Teh (2012), eq. 5 (here as a loss, so negated): for data word w and noise x_j,

        -∇J = -k P_n(w) / (P(w) + k P_n(w)) ∇log P(w) + Σ_j P(x_j) / (P(x_j) + k P_n(x_j)) ∇log P(x_j)

    with P = exp(s - log Z) and ∇log P = ∇s (Z fixed). Built by hand from the drawn noise and
    compared with autograd through the layer, for the hidden state, the weights and the bias."""
    k = 6
    torch.manual_seed(0)
    layer = bigvocab.create_output("nce", H, V, counts=zipf_counts(V), num_samples=k, log_z=0.7).double()
    hidden = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 3, 3, 12, 29])
    torch.manual_seed(4)
    layer.loss(hidden, target, reduction="sum").backward()
    torch.manual_seed(4)
    noise = layer.sampler.sample(N * k).reshape(N, k)
    p_n = layer.sampler.log_q(torch.arange(V)).double().exp()
    with torch.no_grad():
        model = (hidden @ layer.weight.t() + layer.bias - 0.7).exp()  # P(w | h_n), (N, V)
    # d loss / d s_{n, w}: the coefficient of ∇s_w for example n.
    coefficient = torch.zeros(N, V, dtype=torch.float64)
    for n in range(N):
        w = int(target[n])
        coefficient[n, w] -= k * p_n[w] / (model[n, w] + k * p_n[w])
        for x in noise[n].tolist():
            coefficient[n, x] += model[n, x] / (model[n, x] + k * p_n[x])
    torch.testing.assert_close(hidden.grad, coefficient @ layer.weight.detach())
    torch.testing.assert_close(layer.weight.grad.to_dense(), coefficient.t() @ hidden.detach())
    torch.testing.assert_close(layer.bias.grad.to_dense(), coefficient.sum(0))


def test_noise_is_drawn_per_example_by_default():
    """Mnih & Teh draw k noise words per data word; a batch-shared set was 1.6x full's perplexity
    on the synthetic language (see the module docstring)."""
    layer = bigvocab.create_output("nce", H, V, counts=zipf_counts(V))
    assert not layer.shared
