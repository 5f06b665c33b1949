"""``cnn`` -- output embeddings computed from spelling (Jozefowicz et al. 2016, CNN-softmax).

e_w = CharCNN(w) + P c_w and s_w = h . e_w + b_w. CharCNN (Kim et al. 2016) embeds the characters
(with begin/end-of-word marks), runs convolutions of several widths, max-pools each over time,
passes the result through highway layers and projects it to H. The per-word correction c_w (size
``correction_dim``, projected by P to H) lets words with similar spellings but different meanings
part; 0 disables it. Parameters grow with the number of characters and filters, plus
V (correction_dim + 1), instead of V (H + 1).

Scoring chosen ids runs the CNN once per *distinct* word among them, so a sampled step costs
O(N + k) CNN evaluations whatever V is. Whole-vocabulary computations (log Z, top-k) embed all V
words in chunks; in ``eval()`` mode under ``torch.no_grad()`` the table is computed once and
cached until the parameters change or the scorer goes back to training.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from bigvocab.errors import ConfigError
from bigvocab.outputs.functional import DEFAULT_CHUNK_ELEMENTS, gather_rows
from bigvocab.outputs.scorers.rows import RowScorer
from bigvocab.registry import SCORERS
from bigvocab.validation import check_nonnegative_int, check_positive_int

#: (width, number of filters) of the convolutions: Kim et al.'s small model, widths 1-6.
DEFAULT_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 128), (6, 128))

_PAD, _BEGIN, _END = 0, 1, 2


def spell(words: Sequence[str], max_word_length: int) -> tuple[Tensor, Tensor, list[str]]:
    """Character ids (V, L) with begin/end marks and 0-padding, the lengths (V,) including the
    marks, and the alphabet (character id = 3 + its index). Longer words keep their first
    ``max_word_length`` characters."""
    alphabet = sorted({c for word in words for c in word})
    index = {c: i + 3 for i, c in enumerate(alphabet)}
    spelled = [[_BEGIN, *(index[c] for c in word[:max_word_length]), _END] for word in words]
    lengths = torch.tensor([len(s) for s in spelled])
    chars = torch.zeros(len(words), int(lengths.max()), dtype=torch.long)
    for row, ids in enumerate(spelled):
        chars[row, : len(ids)] = torch.tensor(ids)
    return chars, lengths, alphabet


class CharCNN(nn.Module):
    """Spelling (n, L) char ids + lengths (n,) -> (n, out_features) word embeddings.

    Convolution outputs whose window runs past the end mark are masked before the max-pool, so a
    word's embedding does not depend on how much padding its batch has.
    """

    def __init__(
        self,
        num_chars: int,
        out_features: int,
        *,
        char_dim: int,
        filters: Sequence[tuple[int, int]],
        highway_layers: int,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=_PAD, **factory)
        self.widths = [check_positive_int("filter width", int(w)) for w, _ in filters]
        self.convs = nn.ModuleList(
            nn.Conv1d(char_dim, check_positive_int("filter count", int(n)), w, **factory) for w, n in filters
        )
        total = sum(int(n) for _, n in filters)
        highways = [nn.Linear(total, 2 * total, **factory) for _ in range(highway_layers)]
        for highway in highways:
            # Gates start mostly closed (carry), as Srivastava et al. recommend.
            nn.init.constant_(highway.bias[total:], -2.0)
        self.highways = nn.ModuleList(highways)
        self.projection = nn.Linear(total, out_features, **factory)

    def forward(self, chars: Tensor, lengths: Tensor) -> Tensor:
        width = max(chars.shape[1], max(self.widths))
        x = self.embedding(F.pad(chars, (0, width - chars.shape[1]))).transpose(1, 2)
        pooled = []
        for conv, w in zip(self.convs, self.widths):
            out = torch.tanh(conv(x))
            # Window t covers chars t..t+w-1; it is valid if inside the word, or the only window.
            valid = torch.arange(out.shape[2], device=chars.device) < (lengths - w + 1).clamp_min(1)[:, None]
            pooled.append(out.masked_fill(~valid[:, None, :], float("-inf")).amax(2))
        y = torch.cat(pooled, 1)
        for highway in self.highways:
            transform, gate = highway(y).chunk(2, dim=1)
            gate = torch.sigmoid(gate)
            y = gate * F.relu(transform) + (1 - gate) * y
        return self.projection(y)


@SCORERS.register("cnn")
class CNNScorer(RowScorer):
    """Output embeddings from a character CNN plus a small per-word correction.

    Args:
        in_features: H.
        num_classes: V.
        words: the V vocabulary strings (required).
        correction_dim: size of the per-word correction (0 = none).
        bias: a bias per word.
        char_dim, filters, highway_layers, max_word_length: the CharCNN's shape.
        max_chunk_elements: floats held at once when embedding or scoring the whole vocabulary
            (None: 2**24).
        device, dtype: where the parameters are created.
    """

    eval_cache = True

    # Buffers: every word's characters (V, max length) and their count (V,), marks included.
    chars: Tensor
    lengths: Tensor

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        words: Sequence[str] | None = None,
        correction_dim: int = 32,
        bias: bool = True,
        char_dim: int = 16,
        filters: Sequence[tuple[int, int]] = DEFAULT_FILTERS,
        highway_layers: int = 1,
        max_word_length: int = 50,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes, max_chunk_elements=max_chunk_elements)
        if words is None:
            raise ConfigError("cnn needs words=: the vocabulary strings, one per class id")
        if isinstance(words, str) or len(words) != num_classes or not all(isinstance(w, str) for w in words):
            raise ConfigError(f"cnn: words must be a sequence of {num_classes} strings (one per class id)")
        if not filters:
            raise ConfigError("cnn: filters must list at least one (width, count) pair")
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        chars, lengths, self.alphabet = spell(words, check_positive_int("max_word_length", max_word_length))
        self.register_buffer("chars", chars.to(device), persistent=False)
        self.register_buffer("lengths", lengths.to(device), persistent=False)
        self.cnn = CharCNN(
            len(self.alphabet) + 3,
            in_features,
            char_dim=check_positive_int("char_dim", char_dim),
            filters=filters,
            highway_layers=check_nonnegative_int("highway_layers", highway_layers),
            **factory,
        )
        self.correction_dim = check_nonnegative_int("correction_dim", correction_dim)
        if self.correction_dim:
            self.correction: nn.Parameter | None = nn.Parameter(
                torch.randn(num_classes, self.correction_dim, **factory) * 0.01
            )
            self.correction_projection = nn.Linear(self.correction_dim, in_features, bias=False, **factory)
        else:
            self.correction = None
        self.bias = nn.Parameter(torch.zeros(num_classes, **factory)) if bias else None
        self._cache: tuple[tuple, Tensor] | None = None

    def sparse_parameters(self) -> list[nn.Parameter]:
        """Only the per-word rows (correction, bias); the character CNN is shared by every word
        and gets a dense gradient."""
        return [p for p in (self.correction, self.bias) if p is not None]

    def row_parameters(self) -> int:
        return self.correction_dim

    def row_flops(self) -> float:
        """The CharCNN of one word of mean length (marks included), its correction projected."""
        length = float(self.lengths.double().mean())
        char_dim = self.cnn.embedding.embedding_dim
        # A ModuleList types its items as plain Modules: CharCNN's convs are Conv1d, its highways Linear.
        convolutions = sum(
            2.0 * char_dim * w * conv.out_channels * max(1.0, length - w + 1)
            for conv, w in zip(cast("Iterable[nn.Conv1d]", self.cnn.convs), self.cnn.widths)
        )
        highways = sum(2.0 * h.in_features * h.out_features for h in cast("Iterable[nn.Linear]", self.cnn.highways))
        projection = 2.0 * self.cnn.projection.in_features * self.in_features
        return convolutions + highways + projection + 2.0 * self.correction_dim * self.in_features

    def shared_parameters(self) -> int:
        correction = sum(p.numel() for p in self.correction_projection.parameters()) if self.correction_dim else 0
        return sum(p.numel() for p in self.cnn.parameters()) + correction

    def embed(self, ids: Tensor) -> Tensor:
        """Output embeddings of the words ``ids`` (M,) -> (M, H), one CNN row per id."""
        lengths = self.lengths[ids]
        chars = self.chars[ids, : int(lengths.max())]
        out = self.cnn(chars, lengths)
        if self.correction is not None:
            out = out + self.correction_projection(gather_rows(self.correction, ids, sparse=self.sparse_grad))
        return out

    def rows(self, ids: Tensor) -> Tensor:
        # A word asked for twice (a target that was also sampled) goes through the CNN once.
        distinct, inverse = torch.unique(ids, return_inverse=True)
        return self.embed(distinct).index_select(0, inverse)

    def all_rows(self) -> Tensor:
        """All V output embeddings (V, H), computed in chunks of words; cached in eval mode when no
        gradient is being recorded."""
        use_cache = not self.training and not torch.is_grad_enabled()
        key = tuple((p.data_ptr(), p._version) for p in self.parameters())
        if use_cache and self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        per_word = self.chars.shape[1] * sum(conv.out_channels for conv in cast("Iterable[nn.Conv1d]", self.cnn.convs))
        budget = DEFAULT_CHUNK_ELEMENTS if self.max_chunk_elements is None else self.max_chunk_elements
        chunk = max(1, budget // per_word)
        ids = torch.arange(self.num_classes, device=self.chars.device)
        table = torch.cat([self.embed(ids[start : start + chunk]) for start in range(0, self.num_classes, chunk)])
        self._cache = (key, table) if use_cache else None
        return table

    #: The V embeddings, under the name the one-class ``cnn`` layer gave them.
    embeddings = all_rows

    def train(self, mode: bool = True) -> CNNScorer:
        if mode:  # training changes the parameters; the table would only hold memory
            self._cache = None
        return super().train(mode)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", correction_dim={self.correction_dim}"
