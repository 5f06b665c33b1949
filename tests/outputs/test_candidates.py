"""Candidates of ``sampled``, ``neg`` and ``bce`` (sampler, in-batch, mixed, hard negatives) against
a brute-force loop over each row's candidate list: loss values and the gradients of hidden,
rows and bias, the masking rules, the log-Q correction's sign and value in every mode, the
multi-label mixture, and the popularity bias that the correction removes."""

from __future__ import annotations

import copy
import itertools
import math

import pytest
import torch
from reference_checks import assert_matches_reference

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.sampling import draw_candidates
from bigvocab.samplers import StreamingFrequency

V, H, N, K = 23, 4, 6, 7
COUNTS = [1000.0 / (i + 1) ** 1.1 for i in range(V)]

#: Rows with one positive each, ids repeated across rows (so in-batch duplicates occur).
SINGLE = torch.tensor([0, 0, 1, 2, 7, 22])
#: Rows with several positives: -1 padding, a label listed twice, rows of different lengths.
MULTI = torch.tensor([[0, 3, -1], [1, -1, -1], [2, 2, 5], [7, 0, 1], [-1, 22, -1], [4, 6, 8]])
#: Hard negatives: -1 padding, a repeat, one equal to the row's positive, ids also in the batch.
HARD = torch.tensor([[5, 5], [0, 9], [-1, 3], [2, 10], [1, -1], [11, 4]])


def build(name: str = "sampled", **options) -> bigvocab.OutputLayer:
    torch.manual_seed(0)
    layer = bigvocab.create_output(name, H, V, counts=COUNTS, dtype=torch.float64, **options)
    with torch.no_grad():
        layer.weight.normal_()
        if layer.bias is not None:
            layer.bias.normal_()
    return layer


def warm_estimator(layer, steps: int = 40) -> None:
    """Put a streaming estimator in a state with seen and unseen ids and unequal gaps."""
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        layer.frequency.update(torch.multinomial(torch.tensor(COUNTS[:15]), 4, generator=generator))


def inclusion(layer, batch_positives: list[int], before: StreamingFrequency | None):
    """π_y of the in-batch candidates, computed by hand: from the counts, or from the estimator's
    state before the step advanced by this step's distinct positives."""
    distinct = sorted(set(batch_positives))
    if before is None:
        total = sum(COUNTS)
        return {y: 1 - (1 - COUNTS[y] / total) ** len(batch_positives) for y in range(V)}
    step = int(before.step) + 1
    gap = {y: float(before.gap[0, y]) for y in range(V)}
    last = {y: int(before.last_seen[0, y]) for y in range(V)}
    for y in distinct:
        gaps = int(before.gaps_seen[0, y]) + 1  # the mean of the first 1/α gaps, then the moving average
        rate = max(before.alpha, 1 / gaps)
        gap[y] = step if last[y] == 0 else (1 - rate) * gap[y] + rate * (step - last[y])
        last[y] = step
    return {y: 1 / gap[y] if last[y] > 0 else 1 / (step + 1) for y in range(V)}


def brute_force(layer, hidden, target, negatives, sampled, draws, pi):
    """Per row: the softmax (``sampled``) or logistic (``neg``, ``bce``) loss over the row's
    positives and the candidates the masking rules keep, each logit corrected by hand."""
    positives = target.unsqueeze(1) if target.dim() == 1 else target
    batch = [int(y) for y in positives.reshape(-1) if y >= 0]
    in_batch = sorted(set(batch)) if layer.candidates != "sampler" else []
    q = None if layer.sampler is None else layer.sampler.log_q(torch.arange(V)).exp()
    softmax = type(layer).registered_name == "sampled"
    correct = softmax and layer.logq_correction

    def expected_count(y: int) -> float:
        count = pi[y] if layer.candidates != "sampler" else 0.0
        if layer.candidates != "in_batch":
            count += 1 - (1 - float(q[y])) ** draws if layer.unique else draws * float(q[y])
        return count

    losses = []
    for i in range(positives.shape[0]):
        own = [int(y) for y in positives[i] if y >= 0]
        hard = [] if negatives is None else [int(y) for y in negatives[i]]

        def logit(y: int, certain: bool = False, i: int = i) -> torch.Tensor:
            score = hidden[i] / layer.temperature @ layer.weight[y]
            score = score + (layer.bias[y] if layer.bias is not None else 0.0)
            return score - (math.log(expected_count(y)) if correct and not certain else 0.0)

        candidates = [logit(c) for c in in_batch if c not in own and c not in hard]
        if layer.candidates != "in_batch":
            row = sampled if sampled.dim() == 1 else sampled[i]
            for c in (int(y) for y in row):
                if not ((layer.remove_accidental_hits and c in own) or c in hard):
                    candidates.append(logit(c))
        kept = []
        for position, c in enumerate(hard):
            if c >= 0 and c not in own and c not in hard[:position]:
                kept.append(c)
        candidates += [logit(c, certain=True) for c in kept]
        if softmax:
            distinct = sorted(set(own))
            lse = torch.logsumexp(torch.stack([logit(y) for y in distinct] + candidates), 0)
            losses.append(lse - sum(own.count(y) / len(own) * logit(y) for y in distinct))
        else:
            positive = sum(torch.nn.functional.softplus(-logit(y)) for y in own)
            if type(layer).registered_name == "neg":
                positive = positive / len(own)
            losses.append(positive + sum(torch.nn.functional.softplus(c) for c in candidates))
    return torch.stack(losses)


def run(layer, target, negatives=None, streaming_warm=False):
    """The layer's per-row loss and the brute force's, on the same draws."""
    if streaming_warm:
        warm_estimator(layer)
    before = copy.deepcopy(layer.frequency) if getattr(layer, "frequency", None) is not None else None
    hidden = torch.randn(N, H, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_(True)
    torch.manual_seed(5)
    ours = layer.loss(hidden, target, reduction="none", negatives=negatives)
    sampled, draws = None, 0
    if layer.sampler is not None:
        torch.manual_seed(5)  # the layer's first random call is its draw: replay it
        sampled, draws = draw_candidates(layer.sampler, layer.num_samples, N, shared=layer.shared, unique=layer.unique)
    positives = target.reshape(N, -1)
    pi = inclusion(layer, [int(y) for y in positives.reshape(-1) if y >= 0], before)
    reference = brute_force(layer, hidden, target, negatives, sampled, draws, pi)
    inputs = [hidden, layer.weight] + ([layer.bias] if layer.bias is not None else [])
    assert_matches_reference(ours, reference, inputs)


SAMPLED_CASES = [
    {"num_samples": K},
    {"num_samples": K, "unique": False},
    {"num_samples": K, "shared": False},
    {"num_samples": K, "remove_accidental_hits": False, "unique": False},
    {"candidates": "in_batch"},
    {"candidates": "in_batch", "frequency": "streaming"},
    {"candidates": "mixed", "num_samples": K},
    {"candidates": "mixed", "num_samples": K, "unique": False, "frequency": "streaming"},
    {"candidates": "mixed", "num_samples": K, "shared": False, "temperature": 0.5},
    {"candidates": "in_batch", "correction": False, "temperature": 2.0},
    {"candidates": "mixed", "num_samples": K, "correction": False},
]


@pytest.mark.parametrize("options", SAMPLED_CASES, ids=str)
@pytest.mark.parametrize("target", ["single", "multi", "multi+hard"])
def test_sampled_matches_brute_force(options, target):
    layer = build("sampled", **options)
    labels = SINGLE if target == "single" else MULTI
    run(layer, labels, HARD if target == "multi+hard" else None, streaming_warm="frequency" in options)


LOGISTIC_CASES = [
    ("neg", {"num_samples": K}),
    ("neg", {"num_samples": K, "shared": True, "remove_accidental_hits": False}),
    ("neg", {"candidates": "in_batch"}),
    ("neg", {"candidates": "mixed", "num_samples": K, "temperature": 0.5}),
    ("bce", {"num_samples": K}),
    ("bce", {"num_samples": K, "shared": False}),
    ("bce", {"candidates": "in_batch"}),
    ("bce", {"candidates": "mixed", "num_samples": K, "unique": False}),
]


@pytest.mark.parametrize("name, options", LOGISTIC_CASES, ids=str)
@pytest.mark.parametrize("target", ["single", "multi", "multi+hard"])
def test_logistic_matches_brute_force(name, options, target):
    layer = build(name, **options)
    labels = SINGLE if target == "single" else MULTI
    run(layer, labels, HARD if target == "multi+hard" else None)


def test_correction_sign_and_value_by_hand():
    """Two rows, positives 0 and 1, in-batch, zero scores: row 0's loss is
    log(1/π_0 + 1/π_1) - log(1/π_0) = log(1 + π_0/π_1) with π from the counts. The frequent
    positive's candidate copy costs the rare row more: a sign error would swap the two."""
    counts = [30.0, 10.0, 1.0]
    layer = bigvocab.create_output("sampled", 2, 3, counts=counts, candidates="in_batch", dtype=torch.float64)
    with torch.no_grad():
        layer.weight.zero_()
    loss = layer.loss(torch.zeros(2, 2, dtype=torch.float64), torch.tensor([0, 1]), reduction="none")
    pi = [1 - (1 - c / sum(counts)) ** 2 for c in counts]
    expected = torch.tensor([math.log(1 + pi[0] / pi[1]), math.log(1 + pi[1] / pi[0])], dtype=torch.float64)
    torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)
    assert float(loss[0]) > math.log(2) > float(loss[1])


def test_candidates_covering_the_vocabulary_give_the_full_mixture_loss():
    """With every class drawn once by a uniform proposal (all corrections one constant), the
    sampled softmax of a multi-label target -- positives repeated and padded -- is ``full``'s
    uniform mixture, loss and gradients; so is in-batch without correction when the batch's
    positives cover the vocabulary."""
    full = build("full")
    hidden = torch.randn(N, H, dtype=torch.float64).requires_grad_(True)
    reference = full.loss(hidden, MULTI, reduction="none")
    covering = build("sampled", sampler="uniform", num_samples=V - 1)
    covering.load_state_dict(full.state_dict(), strict=False)
    covering._draw = lambda batch_size, unique=False: (torch.randperm(V), V)
    assert_matches_reference(covering.loss(hidden, MULTI, reduction="none"), reference, [hidden])
    target = torch.cat([MULTI, torch.arange(N * 4).remainder(V).reshape(N, 4)], dim=1)  # covers all V
    in_batch = build("sampled", candidates="in_batch", correction=False)
    in_batch.load_state_dict(full.state_dict(), strict=False)
    assert_matches_reference(
        in_batch.loss(hidden, target, reduction="none"), full.loss(hidden, target, reduction="none"), [hidden]
    )


def test_masking_rules_by_hand():
    """In-batch: a row's own positives are never among its negatives, a class that is two rows'
    positive appears once; hard negatives equal to a positive, repeated or -1 are dropped and a
    random copy of a hard negative is dropped (``neg`` with zero scores: each kept negative
    costs log 2, each positive log 2 averaged)."""
    layer = build("neg", candidates="in_batch")
    with torch.no_grad():
        layer.weight.zero_()
    target = torch.tensor([[0, 1], [1, -1], [2, 2]])  # U = {0, 1, 2}
    hard = torch.tensor([[3, 3], [2, -1], [0, 4]])
    loss = layer.loss(torch.zeros(3, H, dtype=torch.float64), target, reduction="none", negatives=hard)
    # row 0: negatives {2} from U, {3} hard; row 1: {0} from U (2 is hard), hard {2}; row 2: {1} from
    # U (0 is hard), hard {0, 4}.
    negatives = torch.tensor([2, 2, 3], dtype=torch.float64)
    torch.testing.assert_close(loss, (1 + negatives) * math.log(2), rtol=1e-12, atol=1e-12)


def test_a_step_touches_only_its_candidate_rows():
    """Sparse gradients on exactly the positives, the batch's positives, the draws and the hard
    negatives -- the padding scores as the row's first positive and adds no row."""
    layer = build("sampled", candidates="mixed", num_samples=3, unique=False)
    hidden = torch.randn(N, H, dtype=torch.float64)
    torch.manual_seed(3)
    layer.loss(hidden, MULTI, negatives=HARD).backward()
    torch.manual_seed(3)
    drawn, _ = draw_candidates(layer.sampler, 3, N, shared=True, unique=False)
    expected = set(MULTI[MULTI >= 0].tolist()) | set(drawn.tolist()) | set(HARD[HARD >= 0].tolist())
    grad = layer.weight.grad
    assert grad.is_sparse
    assert set(grad.coalesce().indices()[0].tolist()) == expected


def test_streaming_frequency_learns_only_in_training_and_is_saved():
    layer = build("sampled", candidates="in_batch", frequency="streaming")
    hidden = torch.randn(N, H, dtype=torch.float64)
    layer.train()
    layer.loss(hidden, SINGLE)
    layer.loss(hidden, MULTI)
    assert int(layer.frequency.step) == 2
    layer.eval()
    layer.loss(hidden, SINGLE)
    assert int(layer.frequency.step) == 2
    state = layer.state_dict()
    assert {"frequency.step", "frequency.last_seen", "frequency.gap"} <= set(state)
    fresh = build("sampled", candidates="in_batch", frequency="streaming")
    fresh.load_state_dict(state)
    assert torch.equal(fresh.frequency.gap, layer.frequency.gap)
    torch.testing.assert_close(fresh.loss(hidden, SINGLE), layer.loss(hidden, SINGLE))


def test_a_given_estimator_is_used_and_checked():
    estimator = StreamingFrequency(V, alpha=0.2)
    layer = build("sampled", candidates="mixed", num_samples=3, frequency=estimator)
    assert layer.frequency is estimator
    with pytest.raises(ConfigError, match="covers 5 classes"):
        build("sampled", candidates="in_batch", frequency=StreamingFrequency(5))


@pytest.mark.parametrize(
    "name, options, match",
    [
        ("sampled", {"candidates": "in_batch", "num_samples": 4}, "draws nothing from a sampler; num_samples="),
        ("sampled", {"candidates": "in_batch", "sampler": "uniform"}, "draws nothing from a sampler; sampler="),
        ("sampled", {"candidates": "batch"}, "candidates must be one of"),
        ("sampled", {"frequency": "streaming"}, "candidates='sampler' has none"),
        ("sampled", {"candidates": "in_batch", "frequency": "online"}, "frequency must be one of"),
        ("sampled", {"temperature": 0.0}, "temperature must be a positive"),
        ("bce", {"shared": False, "unique": True}, "needs shared=True"),
        ("nce", {"candidates": "in_batch"}, "does not take 'candidates'"),
    ],
)
def test_bad_options_are_named(name, options, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_output(name, H, V, counts=COUNTS, **options)


def test_in_batch_without_counts_estimates_them_and_counts_need_counts():
    assert isinstance(bigvocab.create_output("sampled", H, V, candidates="in_batch").frequency, StreamingFrequency)
    with pytest.raises(ConfigError, match="frequency='counts' needs counts="):
        bigvocab.create_output("sampled", H, V, candidates="in_batch", frequency="counts")


def test_negatives_are_validated_and_refused_where_not_taken():
    layer = build("sampled", num_samples=3)
    hidden = torch.randn(N, H, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"negatives shape \(6, 2, 1\) does not match.*\(6, m\)"):
        layer.loss(hidden, SINGLE, negatives=HARD.unsqueeze(2))
    with pytest.raises(ValueError, match="negatives id 23 is outside"):
        layer.loss(hidden, SINGLE, negatives=HARD + 12)
    with pytest.raises(TypeError, match="negatives must hold integer"):
        layer.loss(hidden, SINGLE, negatives=HARD.double())
    for name in ("full", "nce", "hsm"):
        with pytest.raises(ConfigError, match=f"'{name}' takes no negatives=.*sampled, cnn, neg, bce"):
            build(name).loss(hidden, SINGLE, negatives=HARD)


def test_sequence_input_with_multi_label_targets_and_negatives():
    layer = build("sampled", candidates="mixed", num_samples=3)
    hidden = torch.randn(2, 3, H, dtype=torch.float64)
    target, hard = MULTI.reshape(2, 3, 3), HARD.reshape(2, 3, 2)
    assert layer.loss(hidden, target, reduction="none", negatives=hard).shape == (2, 3)
    assert layer.log_prob(hidden, target).shape == (2, 3, 3)


# ------------------------------------------------------------------ the bias the correction removes
def expected_gradient(correction: bool, q: torch.Tensor, batch_size: int, bias: torch.Tensor):
    """The exact expected gradient of the in-batch loss with respect to the bias, over every
    batch of ``batch_size`` i.i.d. draws from q (a bias-only model: one context)."""
    layer = bigvocab.create_output(
        "sampled", 1, q.numel(), counts=q.tolist(), candidates="in_batch", correction=correction, dtype=torch.float64
    )
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.copy_(bias)
    hidden = torch.zeros(batch_size, 1, dtype=torch.float64)
    total = 0.0
    for batch in itertools.product(range(q.numel()), repeat=batch_size):
        ids = torch.tensor(batch)
        total = total + q[ids].prod() * layer.loss(hidden, ids)
    return torch.autograd.grad(total, layer.bias)[0].to_dense()


def test_without_correction_in_batch_gradient_pushes_popular_items_down():
    """Every context has the same label distribution q, so the exact softmax's optimum is the
    bias log q, where its gradient is zero. There, without the correction, the expected in-batch
    gradient pushes the most popular item down and the rarest up (a popular item is every other
    row's negative); with it, both are several times smaller (what is left is the
    self-normalised estimate's bias at a batch of 3)."""
    q = torch.tensor([0.5, 0.25, 0.15, 0.1], dtype=torch.float64)
    biased = expected_gradient(False, q, 3, q.log())
    corrected = expected_gradient(True, q, 3, q.log())
    assert float(biased[0]) > 0 > float(biased[-1])
    assert abs(float(corrected[0])) < float(biased[0]) / 4
    assert abs(float(corrected[-1])) < abs(float(biased[-1])) / 4


@pytest.mark.slow
def test_without_correction_in_batch_training_flattens_the_popular_items():
    """Gradient descent on the exact expected in-batch loss (every batch of 3 from q over 5 items)
    to its fixed point: with the correction the learned distribution is close to q, without it
    the popular item loses most of its excess mass (measured: KL 0.004 against 0.18)."""
    q = torch.tensor([0.45, 0.25, 0.15, 0.1, 0.05], dtype=torch.float64)
    learned = {}
    for correction in (True, False):
        bias = torch.zeros(5, dtype=torch.float64)
        for _ in range(40):
            bias = bias - 1.0 * expected_gradient(correction, q, 3, bias)
        learned[correction] = torch.softmax(bias, 0)
    kl = {c: float((q * (q / p).log()).sum()) for c, p in learned.items()}
    assert kl[True] < kl[False] / 20, kl
    assert float(learned[False][0]) < float(q[0]) - 0.1 < float(learned[True][0])


def test_temperature_divides_the_input_for_training_and_exact_evaluation_alike():
    """A layer at τ is the untempered layer fed h/τ: its exact log_softmax, log_prob and top-k."""
    tempered = build("sampled", candidates="in_batch", temperature=0.25)
    plain = build("sampled", candidates="in_batch")
    hidden = torch.randn(N, H, dtype=torch.float64)
    torch.testing.assert_close(tempered.log_softmax(hidden), plain.log_softmax(hidden / 0.25))
    torch.testing.assert_close(tempered.log_prob(hidden, MULTI), plain.log_prob(hidden / 0.25, MULTI))
    torch.testing.assert_close(tempered.topk(hidden, 3)[0], plain.topk(hidden / 0.25, 3)[0])
    torch.testing.assert_close(tempered.loss(hidden, MULTI), plain.loss(hidden / 0.25, MULTI))
