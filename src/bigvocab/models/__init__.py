"""Models: importing this package registers ``nnlm``, ``lstm``, ``skipgram``, ``cbow``, ``cw`` and ``xmc``.

:func:`build_model` sizes the output layer from the model's configuration, builds it through
:func:`bigvocab.create_output` and hands it to the model, so any registered output layer can be
combined with any model that takes one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bigvocab.errors import ConfigError
from bigvocab.models import cw, lstm, nnlm, word2vec, xmc  # noqa: F401  (registers)
from bigvocab.models.base import LanguageModel, RankingModel, WordModel
from bigvocab.models.cw import CWRanking
from bigvocab.models.lstm import LSTMLM
from bigvocab.models.nnlm import NNLM
from bigvocab.models.word2vec import CBOW, SkipGram
from bigvocab.models.xmc import XMCModel
from bigvocab.outputs.factory import create_output
from bigvocab.registry import MODELS, OUTPUTS

__all__ = [
    "CBOW",
    "LSTMLM",
    "NNLM",
    "CWRanking",
    "LanguageModel",
    "RankingModel",
    "SkipGram",
    "WordModel",
    "XMCModel",
    "build_model",
    "list_models",
]


def list_models() -> list[str]:
    """Names of the registered models."""
    return MODELS.names()


def build_model(
    name: str,
    vocab_size: int,
    output_name: str | None,
    *,
    counts: Sequence[int] | None = None,
    words: Sequence[str] | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
    output_kwargs: Mapping[str, Any] | None = None,
    side: Mapping[str, Any] | None = None,
) -> WordModel:
    """Build the registered model ``name`` with the output layer ``output_name``.

    Args:
        name: ``nnlm``, ``lstm``, ``skipgram``, ``cbow``, ``cw`` or ``xmc``.
        vocab_size: V.
        output_name: a registered output layer (``full``, ``hsm``, ``neg``, ...); must be None for
            ``cw``, which scores windows itself.
        counts: training frequencies (ids sorted by descending count), given to the output layer
            and to the models that read them (word2vec's subsampling).
        words: the vocabulary strings, given to output layers that take ``words`` (``cnn``).
        model_kwargs: the model's options (its config dataclass fields).
        output_kwargs: the output layer's options.
        side: other side inputs of the output layer by kind (``vectors``), passed like ``counts``
            and ``words`` to the layers that read them.
    """
    cls = MODELS.get(name)
    model_kwargs = dict(model_kwargs or {})
    output_kwargs = dict(output_kwargs or {})
    extra = {"counts": counts} if cls.uses_counts else {}
    if not cls.has_distribution:
        if output_name is not None or output_kwargs:
            raise ConfigError(
                f"model {name!r} scores windows with its own head and takes no output layer or "
                f"output options; got output {output_name!r}, options {sorted(output_kwargs)}"
            )
        return cls(vocab_size, **extra, **model_kwargs)
    if output_name is None:
        raise ConfigError(f"model {name!r} needs an output layer (one of: {', '.join(OUTPUTS.names())})")
    in_features = cls.output_features(**model_kwargs)
    words = output_kwargs.pop("words", words)
    output = create_output(
        output_name, in_features, vocab_size, counts=counts, words=words, **dict(side or {}), **output_kwargs
    )
    return cls(vocab_size, output, **extra, **model_kwargs)
