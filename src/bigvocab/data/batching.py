"""Example layouts cut from a 1-D stream of word ids, shared by the models' ``batches``.

Every function here is model-agnostic and vectorised: a batch costs O(batch · width), never
O(stream). Random draws use the caller's ``torch.Generator`` (on its own device) and the results
are moved to the stream's device, so a fixed seed gives the same batches on any device.

* :func:`index_batches` -- positions in order, or shuffled once per pass (:func:`index_batch_count` of them).
* :func:`windows_at` -- fixed windows around positions, padded beyond the stream's ends.
* :func:`bptt_segments` -- the stream as parallel columns cut into BPTT segments (:func:`bptt_segment_count`).
* :func:`subsample_keep_prob` / :func:`subsample` -- word2vec's frequent-word subsampling.
* :func:`shrunk_radius` / :func:`context_mask` -- word2vec's randomly shrunk windows.
* :func:`random_ints` -- uniform integers (C&W's corrupting words).
* :func:`rebatch` -- regroup variable-sized chunks into batches of a fixed size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import torch
from torch import Tensor

from bigvocab.errors import ConfigError, DataError
from bigvocab.validation import check_positive_int


def check_stream(ids: object, vocab_size: int, *, min_length: int) -> Tensor:
    """``ids`` as a 1-D int64 tensor of ids in [0, vocab_size) with at least ``min_length``
    tokens, or a :class:`DataError` saying what is wrong."""
    if not isinstance(ids, Tensor):
        raise DataError(f"the id stream must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dim() != 1:
        raise DataError(f"the id stream must be 1-D, got shape {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise DataError(f"the id stream must hold integer ids, got dtype {ids.dtype}")
    if ids.numel() < min_length:
        raise DataError(f"the id stream has {ids.numel()} tokens; this model needs at least {min_length}")
    ids = ids.long()
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise DataError(f"the id stream holds id {bad}, outside the vocabulary [0, {vocab_size})")
    return ids


def _generator_device(generator: torch.Generator | None) -> torch.device:
    return generator.device if generator is not None else torch.device("cpu")


def index_batches(
    num: int, batch_size: int, *, shuffle: bool, generator: torch.Generator | None, device: torch.device
) -> Iterator[Tensor]:
    """Positions ``0..num-1`` in slices of ``batch_size`` (the last may be shorter), in order or
    in one random permutation drawn per call."""
    check_positive_int("batch_size", batch_size)
    if shuffle:
        order = torch.randperm(num, generator=generator, device=_generator_device(generator)).to(device)
    else:
        order = torch.arange(num, device=device)
    for start in range(0, num, batch_size):
        yield order[start : start + batch_size]


def index_batch_count(num: int, batch_size: int) -> int:
    """How many slices :func:`index_batches` yields for ``num`` positions."""
    return -(-num // batch_size)


def windows_at(ids: Tensor, positions: Tensor, offsets: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """``ids[positions + offsets]`` with ``pad_id`` where that falls outside the stream.

    ids (L,), positions (N,), offsets (W,) -> (windows (N, W), inside (N, W) bool).
    """
    index = positions.unsqueeze(1) + offsets.unsqueeze(0)
    inside = (index >= 0) & (index < ids.numel())
    values = ids[index.clamp(0, ids.numel() - 1)]
    return values.masked_fill(~inside, pad_id), inside


def bptt_segments(ids: Tensor, batch_size: int, bptt: int) -> Iterator[tuple[Tensor, Tensor]]:
    """Inputs and next-word targets as ``rows`` parallel columns cut into segments of ``bptt``.

    Targets are ``ids[1:]`` (the first token has no history), each exactly once. With
    n = len(ids) - 1, rows = min(batch_size, n) and c = n // rows, row r holds targets
    ``r*c + 1 .. (r+1)*c``, yielded as (rows, <=bptt) segments; the n - rows*c left over (fewer than
    ``rows``) continue the *last* row and come after it as (1, <=bptt) segments, so a recurrent
    model that hands its last row's state on evaluates every target with its full history.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("bptt", bptt)
    num_targets = ids.numel() - 1
    rows = min(batch_size, num_targets)
    columns = num_targets // rows
    body = rows * columns
    yield from _segments(ids[:body].view(rows, columns), ids[1 : body + 1].view(rows, columns), bptt)
    if body < num_targets:
        yield from _segments(ids[body:num_targets].view(1, -1), ids[body + 1 :].view(1, -1), bptt)


def bptt_segment_count(num_ids: int, batch_size: int, bptt: int) -> int:
    """How many segments :func:`bptt_segments` yields for a stream of ``num_ids`` ids."""
    num_targets = num_ids - 1
    rows = min(batch_size, num_targets)
    columns = num_targets // rows
    rest = num_targets - rows * columns
    return -(-columns // bptt) + -(-rest // bptt)


def _segments(inputs: Tensor, targets: Tensor, bptt: int) -> Iterator[tuple[Tensor, Tensor]]:
    for start in range(0, inputs.shape[1], bptt):
        yield inputs[:, start : start + bptt], targets[:, start : start + bptt]


def subsample_keep_prob(counts: Sequence[int] | Tensor, sample: float) -> Tensor:
    """Probability of keeping each occurrence of each word (Mikolov et al. 2013, as in word2vec.c).

    With f the word's count, T the total count and t = ``sample``:
    ``keep = (sqrt(f / (t T)) + 1) · t T / f``, capped at 1. Words rarer than about t·T are always
    kept; a word with f >> t·T keeps about sqrt(t T / f) of its occurrences. ``sample=0`` keeps
    everything. Returns a float64 tensor (V,); unseen words (f = 0) get 1.
    """
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if counts.dim() != 1 or counts.numel() == 0:
        raise ConfigError(f"counts must be a non-empty 1-D sequence, got shape {tuple(counts.shape)}")
    if not torch.isfinite(counts).all() or (counts < 0).any():
        raise ConfigError("counts must be finite and non-negative")
    if not 0 <= sample < 1:
        raise ConfigError(f"sample must lie in [0, 1), got {sample!r}")
    threshold = sample * counts.sum()
    keep = torch.ones_like(counts)
    seen = counts > 0
    if threshold > 0:
        ratio = threshold / counts[seen]
        keep[seen] = ((1 / ratio).sqrt() + 1) * ratio
    return keep.clamp_(max=1.0)


def subsample(ids: Tensor, keep_prob: Tensor, generator: torch.Generator | None) -> Tensor:
    """The stream with each token kept independently with probability ``keep_prob[token]``;
    the survivors close up, so windows then reach further (as in word2vec)."""
    draws = torch.rand(ids.numel(), generator=generator, dtype=torch.float64, device=_generator_device(generator))
    return ids[draws.to(ids.device) < keep_prob.to(ids.device)[ids]]


def random_ints(low: int, high: int, num: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    """(num,) long, uniform on {low, ..., high - 1}, drawn on the generator's device."""
    return torch.randint(low, high, (num,), generator=generator, device=_generator_device(generator)).to(device)


def shrunk_radius(num: int, window: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    """Per-centre effective window b ~ U{1, ..., window} (word2vec's random window shrinking),
    which weights a context word at distance d by (window - d + 1) / window. (num,) long."""
    return random_ints(1, window + 1, num, generator, device)


def context_mask(inside: Tensor, offsets: Tensor, radius: Tensor) -> Tensor:
    """Which of the (N, W) context slots at ``offsets`` are used: inside the stream and no
    further from the centre than that centre's ``radius`` (N,)."""
    return inside & (offsets.abs().unsqueeze(0) <= radius.unsqueeze(1))


def rebatch(chunks: Iterable[tuple[Tensor, ...]], batch_size: int) -> Iterator[tuple[Tensor, ...]]:
    """Regroup chunks of aligned tensors (same first dimension) into batches of exactly
    ``batch_size`` rows, in order; the last batch holds what is left."""
    check_positive_int("batch_size", batch_size)
    pending: list[tuple[Tensor, ...]] = []
    held = 0
    for chunk in chunks:
        if chunk[0].shape[0] == 0:
            continue
        pending.append(chunk)
        held += chunk[0].shape[0]
        if held < batch_size:
            continue
        joined = [torch.cat(parts) for parts in zip(*pending)]
        full = held - held % batch_size
        for start in range(0, full, batch_size):
            yield tuple(part[start : start + batch_size] for part in joined)
        pending = [tuple(part[full:] for part in joined)] if full < held else []
        held -= full
    if held:
        yield tuple(torch.cat(parts) for parts in zip(*pending))
