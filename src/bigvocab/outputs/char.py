"""``char`` -- a character-level output layer (Jozefowicz et al. 2016; Ling et al. 2016).

There is no V x H matrix: a small recurrent decoder (LSTM or GRU), conditioned on the hidden
state h, spells the next word one character at a time and ends it with an end-of-word symbol.
The decoder's state starts at tanh(A h); at every step its input is the embedding of the previous
character (a begin symbol first) plus C h, so the condition does not fade in long words. Then

    log p(w | h) = sum_t log p(c_t | c_<t, h),   c_1..c_L the spelling of w, c_{L+1} = end.

Two ways to make this a distribution over the V words, both exact:

* ``constrained=True`` (default): each step's softmax ranges only over the symbols that continue
  some vocabulary word after the prefix so far (the children of its node in the vocabulary's
  prefix trie, the end symbol where the prefix is a word). Every node's children sum to one, so
  the V words do: log p(w | h) needs only w's own path, O(L) decoder steps.
* ``constrained=False``: each step's softmax ranges over the whole alphabet, so the decoder is a
  distribution over all strings (it scores out-of-vocabulary spellings:
  :meth:`CharacterSoftmax.spelling_log_prob`), and the distribution over the vocabulary is that
  one renormalised over the V words, which needs log Z over every word.

Training is teacher forcing on the target's spelling, so a step costs O(N L) decoder steps
whatever V is (its loss is the exact NLL in constrained mode, the open model's NLL otherwise).
Everything that needs every word (``log_softmax``, open-mode ``log_prob`` and ``topk``) walks the
trie level by level for a batch of hidden states, so a prefix shared by many words is computed
once per hidden state, not once per word: the cost is O(N x trie nodes) decoder steps.
Constrained ``topk`` is an exact branch-and-bound search: a prefix's log-probability bounds every
word below it, a beam of width k gives a lower bound on the k-th best word, and only prefixes
above that bound are expanded (:func:`bigvocab.outputs.search.tree_topk`, shared with ``hsm``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.char_trie import CELLS, END, build_trie, scored_nodes, split_step
from bigvocab.outputs.cost import Cost, dot_cost, hidden_cost
from bigvocab.outputs.functional import DEFAULT_CHUNK_ELEMENTS
from bigvocab.outputs.search import Children, tree_topk
from bigvocab.outputs.trees import segment_ranges
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_int


@OUTPUTS.register("char")
class CharacterSoftmax(OutputLayer):
    """A recurrent speller over the vocabulary's characters, conditioned on the hidden state.

    Args:
        in_features: H.
        num_classes: V.
        words: the V distinct, non-empty vocabulary strings (required); the alphabet is theirs.
        constrained: softmax over the trie's children at each step (True) or over the whole
            alphabet, renormalised over the V words (False).
        cell: ``"lstm"`` or ``"gru"``.
        decoder_size: the decoder's state size.
        char_dim: the character embedding size.
        search_budget: (query, prefix) pairs a constrained ``topk`` query may expand before it is
            answered from the full distribution instead (a flat, untrained model prunes little).
        max_chunk_elements: floats held at once by a trie pass (default 2**24).
        device, dtype: where the parameters (and the trie's index tensors) are created.
    """

    #: Constrained top-k searches the trie (the default); an open layer sets its own False.
    topk_by_search = True
    unsharded_reason = "one shared decoder spells every word, so there are no per-word rows to split"

    # Buffers: the trie's tensors (:class:`~bigvocab.outputs.char_trie.Trie`), then its scored nodes.
    parent: Tensor
    symbol: Tensor
    word: Tensor
    allowed: Tensor
    child_start: Tensor
    child_count: Tensor
    path: Tensor
    spelling: Tensor
    lengths: Tensor
    scored_nodes: Tensor
    scored_position: Tensor
    scored_words: Tensor
    scored_anchor: Tensor
    scored_exit: Tensor

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        words: Sequence[str] | None = None,
        constrained: bool = True,
        cell: str = "lstm",
        decoder_size: int = 128,
        char_dim: int = 32,
        search_budget: int = 4096,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        if words is None:
            raise ConfigError("char needs words=: the vocabulary strings, one per class id")
        if isinstance(words, str) or len(words) != num_classes or not all(isinstance(w, str) and w for w in words):
            raise ConfigError(f"char: words must be a sequence of {num_classes} non-empty strings (one per class id)")
        if len(set(words)) != num_classes:
            repeated = next(w for i, w in enumerate(words) if w in words[:i])
            raise ConfigError(f"char: words must be distinct, {repeated!r} appears twice")
        if cell not in CELLS:
            raise ConfigError(f"char: cell must be one of {sorted(CELLS)}, got {cell!r}")
        self.constrained = bool(constrained)
        # Open mode's top-k needs log Z over V, so it scores the whole trie instead of searching.
        self.topk_by_search = self.constrained
        self.cell_kind = cell
        self.alphabet = sorted({c for w in words for c in w})
        self.symbols = {c: i + 1 for i, c in enumerate(self.alphabet)}
        trie = build_trie(words, self.symbols)
        for name, value in vars(trie).items():
            if isinstance(value, Tensor):
                self.register_buffer(name, value.to(device), persistent=False)
        self.levels = trie.levels
        scored = scored_nodes(trie, self.constrained)
        for name in ("nodes", "position", "words", "anchor", "exit"):
            self.register_buffer(f"scored_{name}", getattr(scored, name).to(device), persistent=False)
        self.scored_levels, self.scored_word_levels = scored.levels, scored.word_levels
        size = check_positive_int("decoder_size", decoder_size)
        num_symbols = len(self.alphabet) + 1
        # Input symbols: the characters (1..A) and a begin symbol (0); the end is never an input.
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.embedding = nn.Embedding(num_symbols, check_positive_int("char_dim", char_dim), **factory)
        self.condition = nn.Linear(in_features, char_dim, **factory)
        self.initial = nn.Linear(in_features, size, **factory)
        self.cell = CELLS[cell](char_dim, size, **factory)
        self.output = nn.Linear(size, num_symbols, **factory)
        self.search_budget = check_positive_int("search_budget", search_budget)
        self.max_chunk_elements = max_chunk_elements or DEFAULT_CHUNK_ELEMENTS

    # ------------------------------------------------------------------ the decoder
    def _start(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """(N, H) -> the conditioning input C h (N, char_dim) and the state after the begin
        symbol, which predicts the first character (N, S)."""
        condition = self.condition(hidden)
        state = torch.tanh(self.initial(hidden))
        if self.cell_kind == "lstm":
            state = torch.cat([state, torch.zeros_like(state)], 1)
        begin = self.embedding.weight[0].expand_as(condition)
        return condition, self._step(begin + condition, state)

    def _step(self, inputs: Tensor, state: Tensor) -> Tensor:
        """One decoder step on (P, char_dim) inputs and (P, S) states; LSTM states are [h, c]."""
        if self.cell_kind == "lstm":
            h, c = self.cell(inputs, state.chunk(2, dim=1))
            return torch.cat([h, c], 1)
        return self.cell(inputs, state)

    def _symbol_log_probs(self, state: Tensor, node: Tensor) -> Tensor:
        """(P, S) states at trie nodes (P,) -> (P, A + 1) log-probabilities of the next symbol:
        over the node's allowed symbols (constrained; the rest -inf) or over all of them."""
        logits = self.output(state[:, : self.cell.hidden_size])
        if self.constrained:
            logits = logits.masked_fill(~self.allowed[node], float("-inf"))
        return torch.log_softmax(logits, dim=1)

    # ------------------------------------------------------------------ along one spelling
    def _path_log_prob(self, hidden: Tensor, spelling: Tensor, path: Tensor, lengths: Tensor) -> Tensor:
        """Teacher forcing: log-probability of each spelling (N, L + 1) output symbols, ending
        with END, at trie nodes ``path`` (N, L + 1) (any node in open mode), lengths (N,)."""
        condition, state = self._start(hidden)
        total = hidden.new_zeros(hidden.shape[0])
        for t in range(int(lengths.max())):
            if t:
                state = self._step(self.embedding(spelling[:, t - 1]) + condition, state)
            log_p = self._symbol_log_probs(state, path[:, t]).gather(1, spelling[:, t : t + 1]).squeeze(1)
            total = total + log_p.masked_fill(t >= lengths, 0.0)
        return total

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        return -self._path_log_prob(hidden, self.spelling[target], self.path[target], self.lengths[target])

    def spelling_log_prob(self, hidden: Tensor, spellings: Sequence[str]) -> Tensor:
        """Open mode only: log-probability (N,) that the decoder spells ``spellings[i]`` (any
        string over the alphabet, in the vocabulary or not) and then ends, given hidden[i] (N, H).

        This is the open character model's own probability, over all strings; it is not
        renormalised over the vocabulary (that is :meth:`log_prob`).
        """
        if self.constrained:
            raise ConfigError(
                "char: spelling_log_prob needs constrained=False (the constrained speller spells only vocabulary words)"
            )
        flat_hidden, _, lead = self._flatten(hidden, None)
        if isinstance(spellings, str) or len(spellings) != flat_hidden.shape[0]:
            raise ConfigError(
                f"char: spellings must be a sequence of {flat_hidden.shape[0]} strings, one per hidden state"
            )
        unknown = sorted({c for s in spellings for c in s} - set(self.symbols))
        if unknown:
            raise ConfigError(f"char: spelling_log_prob got characters outside the alphabet: {''.join(unknown)!r}")
        lengths = torch.tensor([len(s) + 1 for s in spellings], device=flat_hidden.device)
        spelling = torch.zeros(len(spellings), int(lengths.max()), dtype=torch.long, device=flat_hidden.device)
        for row, s in enumerate(spellings):
            spelling[row, : len(s)] = torch.tensor([self.symbols[c] for c in s], dtype=torch.long)
        # Open mode ignores the nodes: every step is a softmax over the whole alphabet.
        return self._path_log_prob(flat_hidden, spelling, torch.zeros_like(spelling), lengths).reshape(lead)

    # ------------------------------------------------------------------ over the whole trie
    def _word_log_probs(self, hidden: Tensor) -> Tensor:
        """(N, H) -> (N, V): each word's path log-probability, level by level over the trie's
        scored nodes (:func:`~bigvocab.outputs.char_trie.scored_nodes`), in row chunks that bound
        the (rows, level nodes, gates) floats held at once."""
        widest = max(stop - start for start, stop in self.scored_levels)
        per_row = widest * (self.cell.weight_hh.shape[0] * 3 + self.output.out_features)
        rows = max(1, self.max_chunk_elements // per_row)
        return torch.cat([self._word_log_probs_chunk(hidden[i : i + rows]) for i in range(0, hidden.shape[0], rows)])

    def _word_log_probs_chunk(self, hidden: Tensor) -> Tensor:
        n = hidden.shape[0]
        condition, state = self._start(hidden)
        # W_i x for x = embedding(symbol) + C h splits into a table over symbols and a term per row.
        symbol_gates = self.embedding.weight @ self.cell.weight_ih.T + self.cell.bias_ih
        row_gates = condition @ self.cell.weight_ih.T
        state = state[:, None]  # (n, scored nodes of the level, S)
        prefix = hidden.new_zeros(n, 1)
        out = hidden.new_empty(n, self.num_classes)
        symbol_log_p: Tensor  # each level sets both for the next
        parent_gates: Tensor
        for depth, (start, stop) in enumerate(self.scored_levels):
            nodes = self.scored_nodes[start:stop]
            if depth:
                symbol = self.symbol[nodes]
                parent = self.scored_position[self.parent[nodes]]
                state = split_step(
                    self.cell,
                    symbol_gates[symbol][None] + row_gates[:, None],
                    parent_gates[:, parent],  # noqa: F821  (set by the level before)
                    state[:, parent],
                )
                prefix = prefix[:, parent] + symbol_log_p[:, parent, symbol]  # noqa: F821  (the level before's)
            h = state[..., : self.cell.hidden_size]
            logits = self.output(h)
            if self.constrained:
                logits = logits.masked_fill(~self.allowed[nodes], float("-inf"))
            symbol_log_p = torch.log_softmax(logits, dim=-1)
            # One W_h h per parent, shared by all its children (the last level has none).
            if depth + 1 < len(self.scored_levels):
                parent_gates = h @ self.cell.weight_hh.T + self.cell.bias_hh
            first, last = self.scored_word_levels[depth]
            where = self.scored_position[self.scored_anchor[first:last]]
            out[:, self.scored_words[first:last]] = (
                prefix[:, where] + symbol_log_p[:, where, self.scored_exit[first:last]]
            )
        return out

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        log_p = self._word_log_probs(hidden)
        return log_p if self.constrained else torch.log_softmax(log_p, dim=1)

    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        path = self._path_log_prob(hidden, self.spelling[target], self.path[target], self.lengths[target])
        if self.constrained:
            return path
        return path - torch.logsumexp(self._word_log_probs(hidden), dim=1)

    # ------------------------------------------------------------------ cost model
    def train_cost(self, target: Tensor) -> Cost:
        return self._decoder_cost(float(self.lengths[target.cpu()].sum()), target.numel(), training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        # Constrained: each target's own spelling; open: every trie node, for log Z over V.
        steps = (
            float(self.lengths[target.cpu()].sum())
            if self.constrained
            else float(target.numel() * self.parent.shape[0])
        )
        return self._decoder_cost(steps, target.numel(), training=False)

    def _decoder_cost(self, steps: float, rows: int, *, training: bool) -> Cost:
        """``steps`` decoder steps (a cell update and a softmax over the A + 1 symbols each) for
        ``rows`` hidden states, each first projected to the start state and the condition."""
        size, char_dim, width = self.element_size(), self.embedding.embedding_dim, self.cell.hidden_size
        gates = width * (4 if self.cell_kind == "lstm" else 3)
        cell = dot_cost(
            steps * gates, char_dim + width, gates * (char_dim + width), element_size=size, training=training
        )
        output = dot_cost(
            steps * self.output.out_features, width, self.output.weight.numel(), element_size=size, training=training
        )
        start = dot_cost(
            rows * (char_dim + width),
            self.in_features,
            (char_dim + width) * self.in_features,
            element_size=size,
            training=training,
        )
        return cell + output + start + hidden_cost(rows, self.in_features, element_size=size, training=training)

    # ------------------------------------------------------------------ exact top-k
    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        if not self.constrained:  # log Z over V is needed anyway: one trie pass
            return self._log_softmax(hidden).topk(k, dim=1)
        with torch.no_grad():
            condition, state = self._start(hidden)

            def advance(parent_state: Tensor, query: Tensor, child: Tensor) -> Tensor:
                return self._step(self.embedding(self.symbol[child]) + condition[query], parent_state)

            return tree_topk(
                hidden.shape[0],
                k,
                self._expand,
                lambda rows: self._word_log_probs(hidden[rows]).topk(k, dim=1),
                budget=self.search_budget,
                dtype=hidden.dtype,
                device=hidden.device,
                payload=state,
                advance=advance,
            )

    def _expand(self, query: Tensor, node: Tensor, log_p: Tensor, state: Tensor | None) -> Children:
        """The children of trie ``node``s whose decoder ``state``s are given: every child prefix,
        and the end of the word for a node that spells one."""
        symbol_log_p = self._symbol_log_probs(cast(Tensor, state), node)  # _topk gives each item its state
        counts = self.child_count[node]
        pair = torch.repeat_interleave(torch.arange(node.shape[0], device=node.device), counts)
        child = segment_ranges(self.child_start[node], counts)
        ends = (self.word[node] >= 0).nonzero().flatten()
        return Children(
            pair=torch.cat([pair, ends]),
            node=torch.cat([child, node[ends]]),
            log_p=torch.cat(
                [log_p[pair] + symbol_log_p[pair, self.symbol[child]], log_p[ends] + symbol_log_p[ends, END]]
            ),
            word=torch.cat([torch.full_like(child, -1), self.word[node[ends]]]),
        )

    def extra_repr(self) -> str:
        return (
            super().extra_repr()
            + f", constrained={self.constrained}, cell={self.cell_kind}, decoder_size={self.cell.hidden_size}"
            + f", alphabet={len(self.alphabet)}, trie_nodes={self.parent.shape[0]}"
        )
