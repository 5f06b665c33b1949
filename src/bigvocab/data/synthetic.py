"""A synthetic class-based bigram language whose entropy is known exactly.

The source is the class-based bigram model of Brown et al. (1992) used as a generator: V words in
K classes, each word in exactly one class; the class of token t is drawn from T[c_{t-1}, .] (rows
drawn from a Dirichlet), and the word from a Zipfian emission E[. | c_t] over the class's words.
Because the class is a function of the word, p(x_t | x_{t-1}) = T[c(x_{t-1}), c(x_t)] E[x_t | c(x_t)]
and the true conditional entropy is exact:

    H = sum_c pi(c) [ H(T[c, .]) + sum_c' T[c, c'] H(E[. | c']) ]      (nats per token)

with pi the stationary class distribution. exp(H) is the lowest perplexity any model can reach,
so every output layer's perplexity can be read as a ratio to that floor (DESIGN.md).

Sampling is vectorised end to end (no Python step per token), so V = 2M words and tens of
millions of tokens take seconds: the class chain is walked block-parallel (see :func:`walk_chain`),
and words are drawn by one inverse-CDF ``searchsorted`` over the per-class CDFs laid end to end.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import torch

from bigvocab.errors import ConfigError
from bigvocab.validation import check_nonnegative_int, check_positive_float, check_positive_int

#: Tokens drawn per chunk; bounds the temporary memory of :meth:`SyntheticLanguage.sample`.
CHUNK = 1 << 20
#: Above this many draws, :func:`inverse_cdf` sorts its keys before searching.
SORTED_SEARCH = 1 << 14


def offset_cdfs(probs: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Segment CDFs laid end to end: segment g (``probs[starts[g]:starts[g+1]]``) maps to (g, g+1].

    Inverse-CDF sampling of segment g for a uniform u is then one search of ``g + u`` in the
    whole array, so draws from many different distributions become a single ``searchsorted``.
    Adding the integer g costs relative precision 2^-53 * (g + 1), far below any probability used.
    """
    sizes = np.diff(starts)
    segment = np.repeat(np.arange(len(sizes)), sizes)
    # Extended precision keeps the running sum's rounding (it grows to K) far below the rarest word.
    running = np.cumsum(probs, dtype=np.longdouble)
    before = np.concatenate([[0.0], running])[starts[:-1]]
    within = running - before[segment]
    cdf = segment + np.asarray(within / within[starts[1:] - 1][segment], dtype=np.float64)
    cdf[starts[1:] - 1] = np.arange(1, len(starts))  # each segment ends exactly at g + 1
    return cdf


def inverse_cdf(cdf: np.ndarray, starts: np.ndarray, segment: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Positions drawn from each ``segment``'s distribution by the uniforms ``u`` (same shape).

    Returns the first position whose CDF exceeds u; the clamp only catches ``g + u`` rounding up to
    g + 1, which keeps the draw inside its segment.
    """
    keys = segment + u
    if keys.size > SORTED_SEARCH:
        # Searching sorted keys walks the CDF array in order: about 3x faster for V = 2M.
        order = np.argsort(keys)
        pos = np.empty(keys.shape, dtype=np.int64)
        pos[order] = np.searchsorted(cdf, keys[order], side="right")
    else:
        pos = np.searchsorted(cdf, keys, side="right")
    return np.minimum(pos, starts[segment + 1] - 1)


def walk_chain(cdf: np.ndarray, num_states: int, start: int, u: np.ndarray, block: int | None = None) -> np.ndarray:
    """The Markov chain x_t = F(x_{t-1}, u_t), x_{-1} = ``start``, for all t at once: (n,) int64.

    F(c, u) is the inverse CDF of row c of the transition matrix (``cdf`` from :func:`offset_cdfs`
    with K segments of K states). The result equals the sequential walk exactly. The n steps are
    cut into B blocks of L; every block is walked in parallel from a guessed incoming state, then
    blocks whose incoming state (the previous block's last state) was wrong are walked again, and
    so on until nothing changes. Block b is right after at most b + 1 rounds, and in practice two
    rounds suffice: walks driven by the same uniforms coalesce (once two walks share a state they
    share the rest), so a block's end rarely depends on its start. A re-walk stops early for
    each block as soon as it meets its previous walk. With L = B = sqrt(n), the cost is about
    L + (steps to coalesce) Python-level steps, each a vectorised operation over <= B states.
    Chains that never coalesce (T close to a permutation) still come out exact, only slower.
    """
    n = len(u)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    length = block or max(1, math.isqrt(n))
    blocks = -(-n // length)
    steps = np.full(blocks * length, 0.5)
    steps[:n] = u
    steps = steps.reshape(blocks, length).T.copy()  # (L, B): one step of every block is a row
    starts = np.arange(num_states + 1) * num_states
    walked = np.empty((length, blocks), dtype=np.int64)
    incoming = np.full(blocks, start, dtype=np.int64)
    todo = np.arange(blocks)
    first_round = True
    while todo.size:
        ids, state = todo, incoming[todo]
        for t in range(length):
            state = inverse_cdf(cdf, starts, state, steps[t, ids]) - state * num_states
            if not first_round:
                moved = state != walked[t, ids]
                ids, state = ids[moved], state[moved]
                if not ids.size:
                    break
            walked[t, ids] = state
        first_round = False
        truth = np.concatenate([[start], walked[-1, :-1]])
        todo = np.flatnonzero(truth != incoming)
        incoming = truth
    return walked.T.reshape(-1)[:n]


def _entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats along ``axis`` (0 log 0 = 0)."""
    logs = np.log(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=axis)


class SyntheticLanguage:
    """The class-based bigram source of DESIGN.md, with ids sorted by stationary probability.

    Args:
        vocab_size: V, the number of words.
        num_classes: K <= V; class sizes are drawn (from a Dirichlet(1)-multinomial, at least one
            word each) so that they vary, as real word classes do.
        zipf: exponent s of the emission within a class, E[r-th word | c] proportional to r^-s
            (0 gives uniform emission).
        concentration: the Dirichlet parameter of each row of T; small values give peaked rows,
            i.e. strongly predictive context and a low floor.
        seed: fixes the language and the default sampling stream.

    Attributes (ids sorted by ``unigram``, descending; words ``"w0"``.. in id order; the tensors
    are views of the language's own arrays, so copy before modifying):
        word_class: (V,) int64 class of each word.
        emission: (V,) float64 E[w | word_class[w]].
        transition: (K, K) float64 T, rows sum to 1.
        class_prior: (K,) float64 stationary class distribution pi (pi T = pi).
        unigram: (V,) float64 stationary word distribution pi[c(w)] E[w | c(w)].
    """

    def __init__(
        self,
        vocab_size: int = 10000,
        num_classes: int = 50,
        *,
        zipf: float = 1.0,
        concentration: float = 0.1,
        seed: int = 0,
    ) -> None:
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.num_classes = check_positive_int("num_classes", num_classes)
        if num_classes > vocab_size:
            raise ConfigError(f"num_classes={num_classes} exceeds vocab_size={vocab_size}: every class needs a word")
        if not isinstance(zipf, (int, float)) or not math.isfinite(zipf) or zipf < 0:
            raise ConfigError(f"zipf must be a finite number >= 0, got {zipf!r}")
        self.zipf = float(zipf)
        self.concentration = check_positive_float("concentration", concentration)
        self.seed = check_nonnegative_int("seed", seed)

        rng = np.random.default_rng(self.seed)
        sizes = 1 + rng.multinomial(vocab_size - num_classes, rng.dirichlet(np.ones(num_classes)))
        transition = rng.dirichlet(np.full(num_classes, self.concentration), size=num_classes)
        if not _irreducible(transition > 0):
            # Tiny concentrations give rows whose mass sits on a few classes (the rest underflow to 0).
            raise ConfigError(
                f"with concentration={concentration} the class chain cannot reach every class from every "
                "other (pi would not be unique); use a larger concentration or another seed"
            )
        first = np.repeat(np.cumsum(sizes) - sizes, sizes)
        rank = np.arange(vocab_size) - first  # 0-based rank of each word within its class
        word_class = np.repeat(np.arange(num_classes), sizes)
        emission = (rank + 1.0) ** -self.zipf
        emission /= np.bincount(word_class, weights=emission)[word_class]
        prior = _stationary(transition)
        unigram = prior[word_class] * emission
        order = np.argsort(-unigram, kind="stable")  # relabel: id 0 = most probable word

        self._word_class = word_class[order]
        self._emission = emission[order]
        self._transition = transition
        self._prior = prior
        self._unigram = unigram[order]
        # Words grouped by class; within a class, ascending id is descending emission probability.
        self._members = np.argsort(self._word_class, kind="stable")
        self._class_starts = np.concatenate([[0], np.cumsum(sizes)])
        self._word_cdf = offset_cdfs(self._emission[self._members], self._class_starts)
        self._row_cdf = offset_cdfs(transition.reshape(-1), np.arange(num_classes + 1) * num_classes)
        self._prior_cdf = offset_cdfs(prior, np.array([0, num_classes]))
        self._generator = self.stream_generator(0)

    @property
    def word_class(self) -> torch.Tensor:
        return torch.from_numpy(self._word_class)

    @property
    def emission(self) -> torch.Tensor:
        return torch.from_numpy(self._emission)

    @property
    def transition(self) -> torch.Tensor:
        return torch.from_numpy(self._transition)

    @property
    def class_prior(self) -> torch.Tensor:
        return torch.from_numpy(self._prior)

    @property
    def unigram(self) -> torch.Tensor:
        return torch.from_numpy(self._unigram)

    @cached_property
    def words(self) -> list[str]:
        return [f"w{i}" for i in range(self.vocab_size)]

    def __repr__(self) -> str:
        return (
            f"SyntheticLanguage(vocab_size={self.vocab_size}, num_classes={self.num_classes}, zipf={self.zipf}, "
            f"concentration={self.concentration}, seed={self.seed})"
        )

    def stream_generator(self, stream: int) -> torch.Generator:
        """A torch generator for independent stream number ``stream`` of this language's seed."""
        state = np.random.SeedSequence([self.seed, check_nonnegative_int("stream", stream)]).generate_state(1)
        return torch.Generator().manual_seed(int(state[0]))

    def entropy(self) -> float:
        """The exact conditional entropy H(x_t | x_{t-1}) of the stationary source, in nats."""
        class_entropy = _entropy(self._transition, axis=1)
        emission_entropy = np.bincount(
            self._word_class, weights=-self._emission * np.log(self._emission), minlength=self.num_classes
        )
        return float(self._prior @ (class_entropy + self._transition @ emission_entropy))

    def floor_perplexity(self) -> float:
        """exp(H): the perplexity of the true model, a floor for every model."""
        return math.exp(self.entropy())

    def log_prob(self, prev: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Exact log p(ids | prev) = log T[c(prev), c(ids)] + log E[ids | c(ids)], same shape, float64."""
        prev_np, ids_np = np.asarray(prev, dtype=np.int64), np.asarray(ids, dtype=np.int64)
        classes = self._word_class
        with np.errstate(divide="ignore"):  # transitions of probability 0 (tiny concentration) give -inf
            out = np.log(self._transition[classes[prev_np], classes[ids_np]]) + np.log(self._emission[ids_np])
        return torch.from_numpy(np.asarray(out, dtype=np.float64))

    def sample(self, num_tokens: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(num_tokens,) int64: an exact sample of the stationary source.

        The class before the first token is drawn from pi, so every token's class is distributed
        as pi and the stream has no burn-in.

        Without ``generator`` the language's own stream (seeded by ``seed``) is used and advanced,
        so a fresh language with the same seed repeats the same sequence of calls.
        """
        check_nonnegative_int("num_tokens", num_tokens)
        generator = self._generator if generator is None else generator
        out = torch.empty(num_tokens, dtype=torch.long)
        starts = np.array([0, self.num_classes])
        state = int(inverse_cdf(self._prior_cdf, starts, np.zeros(1, dtype=np.int64), _uniform(1, generator))[0])
        for begin in range(0, num_tokens, CHUNK):
            n = min(CHUNK, num_tokens - begin)
            classes = walk_chain(self._row_cdf, self.num_classes, state, _uniform(n, generator))
            slots = inverse_cdf(self._word_cdf, self._class_starts, classes, _uniform(n, generator))
            out[begin : begin + n] = torch.from_numpy(self._members[slots])
            state = int(classes[-1])
        return out


def _uniform(n: int, generator: torch.Generator) -> np.ndarray:
    """n float64 uniforms in [0, 1) from a torch generator (so callers control the stream)."""
    return torch.rand(n, generator=generator, dtype=torch.float64).numpy()


def _irreducible(edges: np.ndarray) -> bool:
    """Whether the directed graph ``edges`` (K, K bool) is strongly connected: every state is
    reached from state 0 forwards and backwards (breadth-first, one vectorised step per level)."""
    for graph in (edges, edges.T):
        reached = np.zeros(len(graph), dtype=bool)
        reached[0] = True
        frontier = reached.copy()
        while frontier.any():
            frontier = graph[frontier].any(0) & ~reached
            reached |= frontier
        if not reached.all():
            return False
    return True


def _stationary(transition: np.ndarray) -> np.ndarray:
    """pi with pi T = pi and sum(pi) = 1; unique because T is irreducible."""
    k = len(transition)
    system = transition.T - np.eye(k)
    system[-1] = 1.0  # replace one redundant balance equation by the normalisation
    rhs = np.zeros(k)
    rhs[-1] = 1.0
    prior = np.clip(np.linalg.solve(system, rhs), 0.0, None)
    return prior / prior.sum()
