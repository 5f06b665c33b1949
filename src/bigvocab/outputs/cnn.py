"""``cnn`` -- CNN-softmax (Jozefowicz, Vinyals, Schuster, Shazeer & Wu 2016).

The output embedding of word w is computed from its spelling instead of being a free row:
e_w = CharCNN(w) + P c_w, and s_w = h . e_w + b_w. CharCNN (Kim et al. 2016) embeds the characters
(with begin/end-of-word marks), runs convolutions of several widths, max-pools each over time, passes
the result through highway layers and projects it to H. The per-word correction c_w (size
``correction_dim``, projected by P to H) lets words with similar spellings but different meanings
part; 0 disables it. Parameters grow with the number of characters and filters, plus V
(correction_dim + 1), instead of V (H + 1).

Training draws a sampled softmax (Jean et al. 2015): the target against ``num_samples`` words drawn
from a proposal Q (``log_uniform`` by default, the TensorFlow default for frequency-sorted ids),
with the log-Q correction and accidental hits removed, so the CNN runs on only the N + k words of
the step and the cost does not grow with V. With ``num_samples=None`` (or k >= V - 1) the loss is
the exact softmax, running the CNN over the whole vocabulary. Evaluation is exact; in ``eval()``
mode under ``torch.no_grad()`` the V embeddings are computed once and cached until the parameters
change or the layer goes back to training.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from bigvocab.errors import ConfigError
from bigvocab.factory import create_sampler
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.functional import DEFAULT_CHUNK_ELEMENTS, chunked_logsumexp, chunked_topk, gather_rows
from bigvocab.registry import OUTPUTS
from bigvocab.samplers.base import Sampler, log_expected_count
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
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=_PAD)
        self.widths = [check_positive_int("filter width", int(w)) for w, _ in filters]
        self.convs = nn.ModuleList(
            nn.Conv1d(char_dim, check_positive_int("filter count", int(n)), w) for w, n in filters
        )
        total = sum(int(n) for _, n in filters)
        self.highways = nn.ModuleList(nn.Linear(total, 2 * total) for _ in range(highway_layers))
        for highway in self.highways:
            # Gates start mostly closed (carry), as Srivastava et al. recommend.
            nn.init.constant_(highway.bias[total:], -2.0)
        self.projection = nn.Linear(total, out_features)

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


@OUTPUTS.register("cnn")
class CNNSoftmax(OutputLayer):
    """Softmax whose output embeddings come from a character CNN plus a small per-word correction.

    Args:
        in_features: H.
        num_classes: V.
        words: the V vocabulary strings (required).
        correction_dim: size of the per-word correction (0 = none).
        num_samples: words drawn per training step for the sampled softmax; ``None`` (or a value
            >= V - 1, which would sample no fewer words than the vocabulary holds) means the exact loss.
        sampler: proposal for the samples, a name (see ``bigvocab.list_samplers()``) or a Sampler.
        counts: class frequencies, for samplers that read them (``unigram``).
        bias: a bias per word.
        char_dim, filters, highway_layers, max_word_length: the CharCNN's shape.
        max_chunk_elements: floats held at once when embedding or scoring the whole vocabulary.
    """

    eval_cache = True

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        words: Optional[Sequence[str]] = None,
        correction_dim: int = 32,
        num_samples: Optional[int] = 1024,
        sampler: Union[str, Sampler] = "log_uniform",
        counts=None,
        bias: bool = True,
        char_dim: int = 16,
        filters: Sequence[tuple[int, int]] = DEFAULT_FILTERS,
        highway_layers: int = 1,
        max_word_length: int = 50,
        max_chunk_elements: Optional[int] = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        if words is None:
            raise ConfigError("cnn needs words=: the vocabulary strings, one per class id")
        if isinstance(words, str) or len(words) != num_classes or not all(isinstance(w, str) for w in words):
            raise ConfigError(f"cnn: words must be a sequence of {num_classes} strings (one per class id)")
        if not filters:
            raise ConfigError("cnn: filters must list at least one (width, count) pair")
        chars, lengths, self.alphabet = spell(words, check_positive_int("max_word_length", max_word_length))
        self.register_buffer("chars", chars, persistent=False)
        self.register_buffer("lengths", lengths, persistent=False)
        self.cnn = CharCNN(
            len(self.alphabet) + 3,
            in_features,
            char_dim=check_positive_int("char_dim", char_dim),
            filters=filters,
            highway_layers=check_nonnegative_int("highway_layers", highway_layers),
        )
        self.correction_dim = check_nonnegative_int("correction_dim", correction_dim)
        if self.correction_dim:
            self.correction = nn.Parameter(torch.randn(num_classes, self.correction_dim) * 0.01)
            self.correction_projection = nn.Linear(self.correction_dim, in_features, bias=False)
        else:
            self.correction = None
        self.bias = nn.Parameter(torch.zeros(num_classes)) if bias else None
        if num_samples is not None and check_positive_int("num_samples", num_samples) >= num_classes - 1:
            num_samples = None
        self.num_samples = num_samples
        if num_samples is not None:
            self.sampler = create_sampler(sampler, num_classes, counts=counts) if isinstance(sampler, str) else sampler
            if (
                not isinstance(self.sampler, Sampler)
                or self.sampler.num_classes != num_classes
                or self.sampler.conditional
            ):
                raise ConfigError(
                    f"cnn: sampler must be an unconditional Sampler over {num_classes} classes or a sampler name"
                )
        # The correction rows and biases of a sampled step are gathered with sparse gradients.
        self.sparse_grad = num_samples is not None and (self.correction is not None or self.bias is not None)
        self.max_chunk_elements = max_chunk_elements or DEFAULT_CHUNK_ELEMENTS
        self._cache: Optional[tuple[tuple, Tensor]] = None

    def sparse_parameters(self) -> list[nn.Parameter]:
        """Only the per-word rows (correction, bias) are gathered sparsely; the character CNN is
        shared by every word and gets a dense gradient."""
        if not self.sparse_grad:
            return []
        return [p for p in (self.correction, self.bias) if p is not None]

    # ------------------------------------------------------------------ embeddings
    def embed(self, ids: Tensor) -> Tensor:
        """Output embeddings of the words ``ids`` (M,) -> (M, H)."""
        lengths = self.lengths[ids]
        chars = self.chars[ids, : int(lengths.max())]
        out = self.cnn(chars, lengths)
        if self.correction is not None:
            out = out + self.correction_projection(gather_rows(self.correction, ids, sparse=self.sparse_grad))
        return out

    def embeddings(self) -> Tensor:
        """All V output embeddings (V, H), computed in chunks of words; cached in eval mode when no
        gradient is being recorded."""
        use_cache = not self.training and not torch.is_grad_enabled()
        key = tuple((p.data_ptr(), p._version) for p in self.parameters())
        if use_cache and self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        per_word = self.chars.shape[1] * sum(conv.out_channels for conv in self.cnn.convs)
        chunk = max(1, self.max_chunk_elements // per_word)
        ids = torch.arange(self.num_classes, device=self.chars.device)
        table = torch.cat([self.embed(ids[start : start + chunk]) for start in range(0, self.num_classes, chunk)])
        self._cache = (key, table) if use_cache else None
        return table

    def train(self, mode: bool = True) -> "CNNSoftmax":
        if mode:  # training changes the parameters; the table would only hold memory
            self._cache = None
        return super().train(mode)

    # ------------------------------------------------------------------ the objective
    def _loss(self, hidden: Tensor, target: Tensor) -> Tensor:
        if self.num_samples is None:
            return -self._log_prob(hidden, target)
        samples = self.sampler.sample(self.num_samples).to(target.device)
        ids, inverse = torch.unique(torch.cat([target, samples]), return_inverse=True)
        logits = hidden @ self.embed(ids).t()
        if self.bias is not None:
            logits = logits + gather_rows(self.bias, ids, sparse=self.sparse_grad)
        rows = torch.arange(target.shape[0], device=target.device)
        true_logit = logits[rows, inverse[: target.shape[0]]]
        sampled_logit = logits[:, inverse[target.shape[0] :]]
        # log-Q correction: subtract the log of each candidate's expected count in the draw.
        log_q = self.sampler.log_q(torch.cat([target, samples]))
        log_count = log_expected_count(log_q, self.num_samples, unique=False).to(logits)
        true_logit = true_logit - log_count[: target.shape[0]]
        sampled_logit = sampled_logit - log_count[target.shape[0] :]
        sampled_logit = sampled_logit.masked_fill(samples[None, :] == target[:, None], float("-inf"))
        return torch.logsumexp(torch.cat([true_logit[:, None], sampled_logit], 1), 1) - true_logit

    # ------------------------------------------------------------------ exact evaluation
    def _log_prob(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_z, logit = chunked_logsumexp(
            hidden, self.embeddings(), self.bias, target, max_chunk_elements=self.max_chunk_elements
        )
        return logit - log_z

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        logits = hidden @ self.embeddings().t()
        return torch.log_softmax(logits if self.bias is None else logits + self.bias, dim=1)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return chunked_topk(hidden, self.embeddings(), self.bias, k, max_chunk_elements=self.max_chunk_elements)

    def extra_repr(self) -> str:
        return (
            super().extra_repr()
            + f", correction_dim={self.correction_dim}, num_samples={self.num_samples}, bias={self.bias is not None}"
        )
