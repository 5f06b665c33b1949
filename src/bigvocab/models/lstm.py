"""``lstm`` -- an LSTM language model trained with truncated back-propagation through time
(Zaremba, Sutskever & Vinyals 2014, "Recurrent Neural Network Regularization"), with optional
weight tying between the input embedding and the output layer (Press & Wolf 2017; Inan, Khosravi &
Socher 2017).

State across batches. ``batches`` lays the stream out as parallel columns and cuts them into
segments of ``bptt`` steps; each call starts a new *pass* with a fresh id, and every batch carries
``"stream"`` (that id) and ``"step"`` (its index in the pass). The model remembers, per pass, the
state before and after the last batch it processed, so:

* a batch that follows the last one processed starts from that batch's final state (detached,
  so gradients stop at the segment boundary);
* the same batch processed again (``loss`` then ``log_prob``) starts from the same state;
* anything else (a new pass, a batch without ``"stream"``) starts from zeros.

Interleaved passes (validation in the middle of a training epoch) keep separate states.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn

from bigvocab.data.batching import bptt_segment_count, bptt_segments, check_stream
from bigvocab.errors import ConfigError
from bigvocab.models.base import LanguageModel, check_flag
from bigvocab.registry import MODELS
from bigvocab.validation import check_positive_int, check_probability

#: Passes whose states are remembered at once (a training pass, its validation, a test pass...).
MAX_LIVE_PASSES = 8


@dataclass
class LSTMConfig:
    """Options of :class:`LSTMLM` (defaults: Zaremba et al.'s small model, 2 x 200 units)."""

    #: size of the input word vectors.
    embedding_dim: int = 200
    #: units per LSTM layer.
    hidden_dim: int = 200
    #: stacked LSTM layers.
    num_layers: int = 2
    #: dropout on the embeddings, between layers and on the last layer's output (Zaremba et al.).
    dropout: float = 0.0
    #: share the embedding with the output layer's weight; the last hidden state is projected to
    #: ``embedding_dim`` first when the sizes differ. Needs an output layer with ``tie_weights``.
    tie_weights: bool = False
    #: time steps per segment of truncated back-propagation.
    bptt: int = 35
    #: sparse embedding gradients; when tied, must match the output layer's ``sparse_grad``.
    sparse: bool = False

    def __post_init__(self) -> None:
        check_positive_int("embedding_dim", self.embedding_dim)
        check_positive_int("hidden_dim", self.hidden_dim)
        check_positive_int("num_layers", self.num_layers)
        check_probability("dropout", self.dropout, allow_one=False)
        check_positive_int("bptt", self.bptt)
        self.tie_weights = check_flag("tie_weights", self.tie_weights)
        self.sparse = check_flag("sparse", self.sparse)

    def output_features(self) -> int:
        return self.embedding_dim if self.tie_weights else self.hidden_dim


class _PassState(NamedTuple):
    step: int
    before: tuple[Tensor, Tensor] | None
    after: tuple[Tensor, Tensor]


@MODELS.register("lstm")
class LSTMLM(LanguageModel):
    """LSTM language model.

    Batches: ``{"input": (B, T) long, "target": (B, T) long, "stream": () long, "step": () long}``;
    the targets are ``ids[1:]``. Hidden states reach the output layer as (B, T, H).
    """

    config_class = LSTMConfig
    flag_aliases = {"num_layers": "layers", "tie_weights": "tie"}
    #: Each of the ``batch_size`` columns of the stream starts from a zero state.
    batch_size_shapes_results = True

    def __init__(self, vocab_size: int, output, **options) -> None:
        super().__init__(vocab_size, output, **options)
        config = self.config
        self.embedding = nn.Embedding(vocab_size, config.embedding_dim, sparse=config.sparse)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self.lstm = nn.LSTM(
            config.embedding_dim,
            config.hidden_dim,
            num_layers=config.num_layers,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            batch_first=True,
        )
        self.drop = nn.Dropout(config.dropout)
        needs_projection = config.tie_weights and config.hidden_dim != config.embedding_dim
        self.projection = nn.Linear(config.hidden_dim, config.embedding_dim) if needs_projection else None
        if config.tie_weights:
            self._tie(output)
        self._passes: OrderedDict[int, _PassState] = OrderedDict()
        self._next_pass = 0

    def _tie(self, output) -> None:
        layer = type(output).__name__
        tie = getattr(output, "tie_weights", None)
        if not callable(tie):
            raise ConfigError(
                f"lstm: output layer {layer} cannot share its weight with the embedding "
                "(it has no tie_weights method); use tie_weights=False"
            )
        if self.config.sparse != output.sparse_grad:
            # One shared weight must get one kind of gradient, or the trainer's optimisers break.
            kind = "sparse" if output.sparse_grad else "dense"
            raise ConfigError(
                f"lstm: the embedding tied to output layer {layer} shares its {kind} weight "
                f"gradient; set sparse={output.sparse_grad}"
            )
        tie(self.embedding)

    def batches(
        self, ids: Tensor, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """BPTT segments of the stream laid out in ``batch_size`` columns (see
        :func:`bigvocab.data.batching.bptt_segments`). The order is the same with ``train`` or not:
        the carried state needs consecutive segments in sequence; ``generator`` is unused."""
        ids = check_stream(ids, self.vocab_size, min_length=2)
        pass_id = self._next_pass
        self._next_pass += 1
        # Pass and step stay on the CPU: reading them costs no device synchronisation.
        stream = torch.tensor(pass_id)
        try:
            for step, (inputs, targets) in enumerate(bptt_segments(ids, batch_size, self.config.bptt)):
                yield {"input": inputs, "target": targets, "stream": stream, "step": torch.tensor(step)}
        finally:
            self._passes.pop(pass_id, None)

    def num_batches(self, ids: Tensor, batch_size: int) -> int:
        return bptt_segment_count(ids.numel(), batch_size, self.config.bptt)

    def previous_tokens(self, batch: dict[str, Tensor]) -> Tensor:
        return batch["input"]

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """(B, T) input ids -> (B, T, output_features); updates the pass's carried state."""
        inputs = batch["input"]
        initial = self._initial_state(batch)
        out, (h, c) = self.lstm(self.drop(self.embedding(inputs)), initial)
        if "stream" in batch:
            self._remember(int(batch["stream"]), int(batch["step"]), initial, (h.detach(), c.detach()))
        out = self.drop(out)
        return self.projection(out) if self.projection is not None else out

    def _initial_state(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor] | None:
        if "stream" not in batch:
            return None
        known = self._passes.get(int(batch["stream"]))
        step = int(batch["step"])
        if known is None:
            return None
        if known.step == step:
            return known.before
        if known.step != step - 1:
            return None
        rows = batch["input"].shape[0]
        h, c = known.after
        if rows > h.shape[1]:
            return None
        # A batch with fewer rows continues the last ones (the leftover tail of the last column).
        return h[:, -rows:].contiguous(), c[:, -rows:].contiguous()

    def _remember(
        self, pass_id: int, step: int, before: tuple[Tensor, Tensor] | None, after: tuple[Tensor, Tensor]
    ) -> None:
        self._passes[pass_id] = _PassState(step, before, after)
        self._passes.move_to_end(pass_id)
        while len(self._passes) > MAX_LIVE_PASSES:
            self._passes.popitem(last=False)
