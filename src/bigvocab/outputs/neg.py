"""``neg`` -- negative sampling (Mikolov et al. 2013), the objective of word2vec.

Per example, with target t and k negatives y_j drawn from the unigram distribution raised to 3/4:

    loss = -log σ(s_t) - Σ_j log σ(-s_{y_j}).

Unlike NCE there is no correction by the noise probability, so the scores do not estimate log
probabilities; word2vec only wants the vectors. Like word2vec, a negative equal to the target is
skipped. For a skip-gram model, ``hidden`` (N, H) holds the centre words' input vectors and
``target`` (N,) the context words.

The negatives may also be the batch's other targets or both (``candidates=``), plus hard
negatives per example (``loss(..., negatives=ids)``); with several positives per row the positive
term is their mean and the row's negatives are shared (:mod:`bigvocab.outputs.logistic`).

The defaults are word2vec's: no output bias, and output vectors that start at zero (word2vec.c's
``syn1neg``, gensim's ``syn1neg``), so the first steps move only the output side and the input
vectors start learning once the output vectors carry signal. ``zero_init=False`` starts them
uniform in ±1/sqrt(H) like the other linear layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch

from bigvocab.errors import ConfigError
from bigvocab.outputs.engine import NEGATIVE_SAMPLING, EngineTables
from bigvocab.outputs.logistic import LogisticOutput
from bigvocab.outputs.sampling import SamplerSpec
from bigvocab.outputs.scorers.linear import LinearScorer
from bigvocab.registry import OUTPUTS
from bigvocab.samplers.base import Sampler
from bigvocab.validation import check_flag

#: word2vec's ``ns_exponent``: negatives are drawn from the unigram distribution to this power.
NS_EXPONENT = 0.75


@OUTPUTS.register("neg")
class NegativeSampling(LogisticOutput):
    """Word2vec's negative-sampling loss; exact evaluation over the same (V, H) weights.

    Args:
        num_samples: k negatives (default min(5, V - 1), gensim's ``negative=5``).
        sampler: default ``unigram`` with ``power=ns_exponent`` (needs ``counts``).
        ns_exponent: power of the default unigram sampler (gensim's ``ns_exponent``, default
            0.75); only with the default sampler -- a given sampler carries its own.
        counts: training frequencies of the classes.
        shared: one negative set for the whole batch, or one per example (default, as word2vec).
        remove_accidental_hits: skip negatives equal to the example's target (as word2vec).
        bias: a per-class bias (default False, as word2vec).
        zero_init: start the output vectors at zero, as word2vec; None (the default) does so when
            the scorer has free rows (``linear``), and a computed scorer (``cnn``) cannot.
        candidates: ``"sampler"`` (default), ``"in_batch"`` or ``"mixed"``
            (:mod:`bigvocab.outputs.candidates`); ``num_samples`` and ``sampler`` only with draws.
        temperature: τ; the scores are s(h/τ, y).
        scorer, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

    # word2vec draws negatives per pair; a language model can share them across the batch
    # (Jozefowicz et al. 2016), which turns N x k gathered rows into k.
    variants = {"per-example": {}, "shared": {"shared": True}}
    retrieval_variants = {"": {}}
    engine_kind = NEGATIVE_SAMPLING
    flag_aliases = {"num_samples": "negative"}  # gensim's name

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: int | None = None,
        sampler: SamplerSpec = None,
        ns_exponent: float | None = None,
        counts: Sequence[float] | None = None,
        shared: bool = False,
        remove_accidental_hits: bool = True,
        bias: bool = False,
        zero_init: bool | None = None,
        candidates: str = "sampler",
        temperature: float = 1.0,
        **scorer_options: Any,
    ) -> None:
        if ns_exponent is not None and sampler is not None:
            raise ConfigError(
                f"ns_exponent={ns_exponent!r} sets the power of the default unigram sampler; with "
                f"sampler={sampler!r} give that sampler its own power instead"
            )
        # Read by _reset_objective, which the base constructor calls.
        self.zero_init = zero_init if zero_init is None else check_flag("zero_init", zero_init)
        super().__init__(
            in_features,
            num_classes,
            candidates=candidates,
            num_samples=num_samples,
            default_num_samples=5,
            sampler=sampler,
            default_sampler=("unigram", {"power": NS_EXPONENT if ns_exponent is None else ns_exponent}),
            counts=counts,
            shared=shared,
            unique=False,
            remove_accidental_hits=remove_accidental_hits,
            temperature=temperature,
            correction=False,
            frequency=None,
            bias=bias,
            **scorer_options,
        )

    def _reset_objective(self) -> None:
        if self.zero_init is None:
            self.zero_init = self.scorer.free_rows
        if self.zero_init:
            self.scorer.zero_rows_()

    def engine_unsupported(self) -> str | None:
        """word2vec's update: free output rows without bias, k negatives drawn per example from a
        fixed distribution, a negative equal to the target skipped."""
        if self.candidates != "sampler":
            return f"the engine draws negatives from the sampler; candidates={self.candidates!r} is the torch path's"
        if self.temperature != 1.0:
            return "the engine scores h . w as it is; temperature= is the torch path's"
        if not isinstance(self.scorer, LinearScorer):
            return f"the engine updates free output rows (the linear scorer), not {type(self.scorer).__name__}'s"
        if self.scorer.bias is not None:
            return "the engine's output layers have no bias (word2vec's); this one has one"
        if self.shared:
            return "the engine draws negatives per example; shared=True is the torch path's"
        if not self.remove_accidental_hits:
            return "the engine skips a negative equal to the target, as word2vec; remove_accidental_hits=False is not"
        if self.sampler is None or type(self.sampler).update is not Sampler.update:
            return "the engine's noise distribution is fixed; this sampler adapts during training"
        return None

    def _engine_tables(self) -> EngineTables:
        weight = cast(LinearScorer, self.scorer).weight  # engine_tables checked it is the linear scorer
        assert self.sampler is not None  # engine_unsupported refuses a layer without one
        noise = self.sampler.log_q(torch.arange(self.num_classes, device=weight.device)).exp()
        return EngineTables("neg", weight, num_samples=self.num_samples, noise=noise)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", zero_init={self.zero_init}"
