"""The model contracts. :class:`WordModel` is what every model does (batches, a training loss, word
vectors); a :class:`LanguageModel` adds a normalised distribution -- an encoder that turns a batch
into hidden states, and an output layer, passed in, that turns them into a distribution over the
vocabulary -- and a :class:`RankingModel` declares that it has none.

A model knows nothing about which output layer it has: it feeds ``self.output`` hidden states of
``output_features`` dimensions through the :class:`~bigvocab.outputs.base.OutputLayer` interface
only, so every method (full, tree, sampled, ...) works with every model.

Each model describes its options with a dataclass (``config_class``): the fields are the keyword
options with their defaults, each explained by the ``#:`` comment above it (``bigvocab train``
makes every field a flag with that help), ``__post_init__`` validates them, and
``output_features()`` gives the in_features the output layer must have. ``output_features`` is
also a classmethod of the model, so a builder can size the output layer before the model exists.
A model also declares what a run of it uses where the caller says nothing (:meth:`WordModel.run_defaults`,
:meth:`WordModel.output_defaults`): word2vec's are gensim's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, cast

import torch
from torch import Tensor, nn

from bigvocab.declarations import Option, dataclass_options
from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import reference_output
from bigvocab.registry import unknown_name_message
from bigvocab.validation import check_flag, check_positive_int

__all__ = ["LanguageModel", "RankingModel", "WordModel", "check_flag"]


class WordModel(nn.Module):
    """Base class of every model: ``batches`` cuts a stream of ids into the model's own examples and
    ``loss`` trains on them; the input embedding gives the word vectors.

    Args:
        vocab_size: V; word ids lie in [0, V).
        **options: the fields of ``config_class``.

    Subclasses store their input embedding as ``self.embedding`` (rows from V on, if any, are
    padding). What a model can do beyond training is declared by its base: a
    :class:`LanguageModel` has a normalised distribution (``log_prob``, perplexity, an output
    layer), a :class:`RankingModel` only scores its examples.
    """

    #: The options dataclass.
    config_class: ClassVar[type]
    #: True for models with a normalised distribution p(w | context): the LanguageModel subclasses.
    has_distribution: ClassVar[bool] = False
    #: True when the constructor takes the training frequencies as ``counts=``.
    uses_counts: ClassVar[bool] = False
    #: True when evaluation batches change the result, not only memory: a model that carries its
    #: state along the stream starts every one of its ``batch_size`` streams from zero.
    batch_size_shapes_results: ClassVar[bool] = False
    #: True when what the model is trained for is not its perplexity (word2vec's word vectors):
    #: ``bigvocab train`` then skips the exact validation and test perplexity unless asked.
    trained_for_vectors: ClassVar[bool] = False
    #: How ``bigvocab eval`` and a run's test measure the model: ``"perplexity"`` of a stream of
    #: ids, or ``"retrieval"``: P@k, nDCG@k, PSP@k of its ranked labels on labelled rows.
    evaluation: ClassVar[str] = "perplexity"
    #: Other names users know an option by, option -> name: ``bigvocab train`` accepts ``--NAME``
    #: as another spelling of the option's flag.
    flag_aliases: ClassVar[Mapping[str, str]] = {}
    #: The input embedding, set by each subclass (a bag of them for a model whose examples are bags).
    embedding: nn.Embedding | nn.EmbeddingBag

    def __init__(self, vocab_size: int, **options: Any) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        if vocab_size < 2:
            raise ConfigError(f"vocab_size must be at least 2, got {vocab_size}")
        self.config = self.make_config(**options)

    # ------------------------------------------------------------------ configuration
    @classmethod
    def model_name(cls) -> str:
        return getattr(cls, "registered_name", cls.__name__)

    @classmethod
    def make_config(cls, **options: Any) -> Any:
        """The validated options; an unknown option names the valid ones and the closest."""
        valid = [field.name for field in dataclasses.fields(cls.config_class)]
        for key in options:
            if key not in valid:
                raise ConfigError(unknown_name_message(f"{cls.model_name()} option", key, valid))
        return cls.config_class(**options)

    @classmethod
    def declared_options(cls) -> dict[str, Option]:
        """The fields of ``config_class`` with their kind of value, default and help (the ``#:``
        comment above each; :func:`bigvocab.declarations.dataclass_options`)."""
        return dataclass_options(cls.config_class)

    @classmethod
    def run_defaults(cls) -> dict[str, Any]:
        """What a run of this model uses where its caller gives no value, by the names of
        :func:`bigvocab.runs.new_run`: ``output`` (a registered output layer), the corpus's
        ``min_count`` and ``max_size``, and :class:`~bigvocab.train.TrainConfig` fields
        (``patience`` 0: never stop early). Empty here: the general defaults apply."""
        return {}

    @classmethod
    def output_defaults(cls, output: str) -> dict[str, Any]:
        """Options this model gives the registered output layer ``output`` unless its caller
        sets them (none here)."""
        return {}

    # ------------------------------------------------------------------ the contract
    def batches(
        self, ids: Any, batch_size: int, *, train: bool, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, Tensor]]:
        """The model's examples cut from its data: the 1-D stream of ids ``ids`` (a model that
        reads other data, such as ``xmc``'s labelled rows, says so). ``train=False`` is deterministic
        and predicts every target once, in order, so the mean of ``log_prob`` is the exact
        log-likelihood. Every batch has a ``"target"`` tensor, one element per predicted token."""
        raise NotImplementedError

    def num_batches(self, ids: Any, batch_size: int) -> int | None:
        """How many batches :meth:`batches` yields for ``ids`` (the same with ``train`` or not; a
        model whose training draws how many examples it makes, as word2vec's subsampling, gives
        the ``train=False`` count, which a training pass must not exceed), or None when that is
        only known by drawing them (progress bars then show no total)."""
        return None

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Scalar training objective, averaged over the batch's examples."""
        raise NotImplementedError

    def word_vectors(self) -> Tensor:
        """The input embedding as word vectors, (V, D); a view of the parameter, detached."""
        return self.embedding.weight[: self.vocab_size].detach()

    def sparse_parameters(self) -> list[nn.Parameter]:
        """Parameters whose gradients are sparse (embeddings and bags built with ``sparse=True``), each once."""
        found: dict[int, nn.Parameter] = {}
        for module in self.modules():
            if isinstance(module, nn.Embedding | nn.EmbeddingBag) and module.sparse:
                found[id(module.weight)] = cast(nn.Parameter, module.weight)  # nn.Embedding types it a Tensor
        return list(found.values())


class LanguageModel(WordModel):
    """A model with a normalised distribution: an encoder that turns a batch into hidden states,
    and an output layer, passed in, that trains on them (``loss``) and normalises them exactly
    (``log_prob``).

    Args:
        vocab_size: V; word ids lie in [0, V).
        output: the output layer, with ``num_classes == V`` and ``in_features`` equal to
            ``output_features(**options)``.
        **options: the fields of ``config_class``, whose ``output_features()`` gives that size.

    Subclasses implement :meth:`batches` and :meth:`features`.
    """

    has_distribution = True

    @classmethod
    def run_defaults(cls) -> dict[str, Any]:
        """The exact softmax (:func:`~bigvocab.outputs.factory.reference_output`) when no output
        layer is named."""
        return {"output": reference_output()}

    def __init__(self, vocab_size: int, output: OutputLayer | None, **options: Any) -> None:
        super().__init__(vocab_size, **options)
        if output is None:
            raise ConfigError(f"model {self.model_name()!r} needs an output layer (see bigvocab.list_outputs())")
        self._check_output(output)
        self.output = output

    def _check_output(self, output: OutputLayer) -> None:
        name, layer = self.model_name(), type(output).__name__
        if not isinstance(output, OutputLayer):
            raise ConfigError(f"model {name!r}: output must be an OutputLayer, got {layer}")
        if output.num_classes != self.vocab_size:
            raise ConfigError(
                f"model {name!r}: output layer {layer} has num_classes={output.num_classes} "
                f"but the vocabulary has {self.vocab_size} words"
            )
        expected = self.config.output_features()
        if output.in_features != expected:
            raise ConfigError(
                f"model {name!r}: output layer {layer} has in_features={output.in_features} but this "
                f"configuration feeds it {expected}-dimensional hidden states (see output_features)"
            )

    @classmethod
    def output_features(cls, **options: Any) -> int:
        """in_features the output layer must have for this configuration."""
        return cls.make_config(**options).output_features()

    def features(self, batch: dict[str, Tensor]) -> Tensor:
        """Hidden states for the output layer, shape ``batch["target"].shape + (H,)``."""
        raise NotImplementedError

    def previous_tokens(self, batch: dict[str, Tensor]) -> Tensor | None:
        """The token just before each target (shaped like the target), or None for models whose
        examples have no such order. The output layer receives it as ``context`` (used by
        context-conditioned proposals such as ``ais``'s bigram)."""
        return None

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Scalar training objective: the output layer's loss, averaged over the targets."""
        return self.output.loss(self.features(batch), batch["target"], context=self.previous_tokens(batch))

    def log_prob(self, batch: dict[str, Tensor]) -> Tensor:
        """Exact log p(target | context), shape ``batch["target"].shape``."""
        return self.output.log_prob(self.features(batch), batch["target"])

    def sparse_parameters(self) -> list[nn.Parameter]:
        """Sparse embeddings and the output layer's ``sparse_parameters()``, each once."""
        found = {id(param): param for param in super().sparse_parameters()}
        for param in self.output.sparse_parameters():
            found[id(param)] = param
        return list(found.values())


class RankingModel(WordModel):
    """A model that scores its examples with its own head and has no normalised distribution, so
    no output layer, ``log_prob`` or perplexity (Collobert & Weston's ranking model); its product
    is the word vectors."""

    def __init__(self, vocab_size: int, output: None = None, **options: Any) -> None:
        if output is not None:
            raise ConfigError(
                f"model {self.model_name()!r} scores with its own head and takes no output layer; pass None"
            )
        super().__init__(vocab_size, **options)
