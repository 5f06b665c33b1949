"""``char``: the speller against a brute-force per-word, per-character loop, in both modes."""

from __future__ import annotations

import math

import pytest
import torch
from reference_checks import assert_matches_reference, assert_topk_is_exact

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs import search

WORDS = ["a", "an", "and", "ant", "b", "be", "bee", "cab", "ca", "c", "dab", "tan"]
V, H = len(WORDS), 5


def make(words=WORDS, **options) -> bigvocab.OutputLayer:
    torch.manual_seed(4)
    layer = bigvocab.create_output("char", H, len(words), words=words, decoder_size=6, char_dim=3, **options).double()
    with torch.no_grad():
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.5)
    return layer


def reference_log_probs(layer, hidden: torch.Tensor, words=WORDS) -> torch.Tensor:
    """(N, V) log p(word | h) spelt one character at a time with the layer's own cell, the
    allowed symbols worked out from the word list by string comparison (no trie)."""
    alphabet = sorted({c for w in words for c in w})
    rows = []
    for h in hidden:
        row = []
        for word in words:
            condition = layer.condition(h[None])
            state = torch.tanh(layer.initial(h[None]))
            state = (state, torch.zeros_like(state)) if layer.cell_kind == "lstm" else state
            inputs = layer.embedding.weight[0][None] + condition
            total = h.new_zeros(())
            for t, symbol in enumerate(list(word) + [None]):
                state = layer.cell(inputs, state)
                logits = layer.output(state[0] if layer.cell_kind == "lstm" else state)[0]
                names = [None] + alphabet  # output symbol 0 ends the word
                if layer.constrained:
                    prefix = word[:t]
                    ok = {w[t] for w in words if w.startswith(prefix) and len(w) > t} | (
                        {None} if prefix in words else set()
                    )
                    logits = logits.masked_fill(torch.tensor([s not in ok for s in names]), -math.inf)
                total = total + torch.log_softmax(logits, 0)[names.index(symbol)]
                if symbol is not None:
                    inputs = layer.embedding.weight[names.index(symbol)][None] + condition
            row.append(total)
        rows.append(torch.stack(row))
    log_p = torch.stack(rows)
    return log_p if layer.constrained else torch.log_softmax(log_p, 1)


@pytest.mark.parametrize("constrained", [True, False])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_every_word_matches_the_brute_force_speller(constrained, cell):
    layer = make(constrained=constrained, cell=cell)
    hidden = torch.randn(3, H, dtype=torch.float64, requires_grad=True)
    reference = reference_log_probs(layer, hidden)
    params = list(layer.parameters())
    assert_matches_reference(layer.log_softmax(hidden), reference, [hidden, *params])
    target = torch.tensor([2, 7, 11])
    gathered = reference_log_probs(layer, hidden).gather(1, target[:, None]).squeeze(1)
    assert_matches_reference(layer.log_prob(hidden, target), gathered, [hidden, *params])
    # The V probabilities sum to one: by construction (constrained) or by renormalising (open).
    torch.testing.assert_close(reference.exp().sum(1), torch.ones(3, dtype=torch.float64), atol=1e-12, rtol=0)


def test_gradients_match_finite_differences():
    for constrained in (True, False):
        layer = make(constrained=constrained)
        hidden = torch.randn(2, H, dtype=torch.float64, requires_grad=True)
        target = torch.tensor([3, 9])
        assert torch.autograd.gradcheck(lambda h: layer.log_prob(h, target), (hidden,))  # noqa: B023
        assert torch.autograd.gradcheck(lambda h: layer.loss(h, target, reduction="none"), (hidden,))  # noqa: B023


def test_constrained_loss_is_the_exact_nll_and_open_loss_the_open_models():
    hidden = torch.randn(4, H, dtype=torch.float64)
    target = torch.tensor([0, 5, 8, 10])
    constrained = make()
    torch.testing.assert_close(
        constrained.loss(hidden, target, reduction="none"), -constrained.log_prob(hidden, target)
    )
    open_layer = make(constrained=False)
    spelt = open_layer.spelling_log_prob(hidden, [WORDS[i] for i in target])
    torch.testing.assert_close(open_layer.loss(hidden, target, reduction="none"), -spelt)


def test_training_and_constrained_log_prob_never_walk_the_whole_vocabulary(monkeypatch):
    hidden = torch.randn(4, H, dtype=torch.float64)
    target = torch.tensor([0, 5, 8, 10])
    for constrained in (True, False):
        layer = make(constrained=constrained)
        monkeypatch.setattr(layer, "_word_log_probs", lambda *_: pytest.fail("walked the trie"))
        layer.loss(hidden, target).backward()
        if constrained:
            layer.log_prob(hidden, target)


def test_out_of_vocabulary_spellings_in_open_mode():
    layer = make(constrained=False)
    hidden = torch.randn(2, H, dtype=torch.float64)
    oov = layer.spelling_log_prob(hidden, ["tab", "nab"])
    # By hand: the open softmax over the whole alphabet at every step, then the end symbol.
    names = [None] + layer.alphabet
    for row, word in enumerate(["tab", "nab"]):
        h = hidden[row : row + 1]
        condition = layer.condition(h)
        state = (torch.tanh(layer.initial(h)), torch.zeros(1, 6, dtype=torch.float64))
        inputs = layer.embedding.weight[0][None] + condition
        total = 0.0
        for symbol in list(word) + [None]:
            state = layer.cell(inputs, state)
            total = total + torch.log_softmax(layer.output(state[0])[0], 0)[names.index(symbol)]
            if symbol is not None:
                inputs = layer.embedding.weight[names.index(symbol)][None] + condition
        torch.testing.assert_close(oov[row], total)
    # The open model spreads mass over all strings: the V words hold less than all of it.
    in_vocab = layer.spelling_log_prob(hidden.repeat_interleave(V, 0), WORDS * 2).reshape(2, V)
    assert (in_vocab.logsumexp(1) < 0).all()
    torch.testing.assert_close(layer.log_softmax(hidden), torch.log_softmax(in_vocab, 1))


@pytest.mark.parametrize("constrained", [True, False])
def test_topk_is_exact_and_the_search_prunes_a_peaked_model(constrained, monkeypatch):
    layer = make(constrained=constrained)
    hidden = 3 * torch.randn(6, H, dtype=torch.float64)
    for k in (1, 3, V):
        assert_topk_is_exact(layer, hidden, k)
    if constrained:
        passes = []
        original = search.frontier_search
        monkeypatch.setattr(search, "frontier_search", lambda *a, **kw: passes.append(original(*a, **kw)) or passes[-1])
        layer.topk(hidden, 2)
        _beam, bounded = passes
        assert (bounded.found >= 2).all() and (bounded.spent < layer.parent.shape[0]).any()


def test_topk_on_a_larger_vocabulary_matches_the_full_distribution():
    generator = torch.Generator().manual_seed(0)
    letters = "abcdefgh"
    words = sorted(
        {
            "".join(letters[i] for i in torch.randint(0, 8, (int(n),), generator=generator))
            for n in torch.randint(1, 7, (400,), generator=generator)
        }
    )
    layer = make(words=words)
    hidden = 4 * torch.randn(10, H, dtype=torch.float64)
    assert_topk_is_exact(layer, hidden, 5)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"words": None}, "needs words"),
        ({"words": ["a"] * V}, "distinct, 'a' appears twice"),
        ({"words": WORDS[:-1]}, f"sequence of {V}"),
        ({"words": WORDS[:-1] + [""]}, "non-empty"),
        ({"words": WORDS, "cell": "rnn"}, "cell must be one of"),
    ],
)
def test_bad_options_are_named(options, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_output("char", H, V, **options)


def test_spelling_log_prob_errors():
    hidden = torch.randn(1, H, dtype=torch.float64)
    with pytest.raises(ConfigError, match="constrained=False"):
        make().spelling_log_prob(hidden, ["ab"])
    with pytest.raises(ConfigError, match="outside the alphabet: 'z'"):
        make(constrained=False).spelling_log_prob(hidden, ["az"])


def test_cost_model_counts_the_spelling_steps():
    layer = make()
    target = torch.tensor([0, 2])  # "a" and "and": 2 + 4 decoder steps with the end symbol
    cost = layer.train_cost(target)
    lstm = 2 * 6 * 4 * 6 * (3 + 6)  # steps x gates x (char_dim + decoder_size) multiply-adds, x2
    output = 2 * 6 * (len(layer.alphabet) + 1) * 6
    start = 2 * 2 * (3 + 6) * H
    assert cost.flops == 3 * (lstm + output + start)
    assert layer.log_prob_cost(target).flops == lstm + output + start
    assert make(constrained=False).log_prob_cost(target).flops > cost.flops


def test_the_whole_trie_pass_skips_subtrees_without_a_choice():
    # Constrained, a node with one allowed symbol gives it probability one, so only prefixes with
    # a branching node at or below them need a decoder state; open mode scores every node.
    def scored_prefixes(layer):
        spelt = {0: ""}
        for node in range(1, layer.parent.shape[0]):
            spelt[node] = spelt[int(layer.parent[node])] + layer.alphabet[int(layer.symbol[node]) - 1]
        return {spelt[int(node)] for node in layer.scored_nodes}

    assert scored_prefixes(make()) == {"", "a", "an", "b", "be", "c", "ca"}
    assert len(scored_prefixes(make(constrained=False))) == make().parent.shape[0]
