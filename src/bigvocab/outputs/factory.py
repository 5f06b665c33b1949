"""``create_output``: a registry lookup that checks keyword arguments.

A misspelt keyword (``num_sample=``) or one the method does not take gets a :class:`ConfigError`
naming the method's real options, instead of Python's bare ``unexpected keyword argument``.

Side inputs -- ``counts`` (training frequencies), ``words`` (the vocabulary strings) and
``vectors`` (a (V, D) tensor) -- may be given for any layer; each is passed only to the layers
that declare it (:meth:`~bigvocab.outputs.base.OutputLayer.side_inputs`), so a caller that has
them passes them always and never needs to know which layer reads what.
"""

from __future__ import annotations

from typing import Any

from bigvocab.errors import ConfigError
from bigvocab.registry import OUTPUTS, SCORERS, build


def create_output(
    name: str,
    in_features: int,
    num_classes: int,
    *,
    counts=None,
    words=None,
    vectors=None,
    vocab_parallel: Any = None,
    **kwargs: Any,
):
    """Build the registered output layer ``name`` (see :func:`list_outputs`).

    Args:
        name: e.g. ``"full"``, ``"hsm"``, ``"sampled"``.
        in_features: H, the size of the hidden state fed to the layer.
        num_classes: V, the vocabulary size.
        counts: training frequencies of the classes, ids sorted by descending frequency (Huffman
            trees, unigram samplers, frequency bands).
        words: the V vocabulary strings (the ``cnn`` scorer spells them).
        vectors: (V, D) word vectors (hsm's ``clustered`` tree).
        vocab_parallel: a ``torch.distributed`` process group (or ``True`` for the default group
            ``WORLD``): the layer is built whole, alike on every rank (seed torch the same way on
            each), and this rank keeps its part (:func:`bigvocab.outputs.parallel.vocab_parallel`);
            a layer that cannot be split raises a :class:`ConfigError` saying why.
        **kwargs: the layer's own options (``num_samples``, ``sampler``, ``tree``, ``cutoffs``,
            ``scorer``...).

    ``counts``, ``words`` and ``vectors`` go only to the layers that read them.
    """
    side = {"counts": counts, "words": words, "vectors": vectors}
    layer = build(OUTPUTS, name, (in_features, num_classes), side, kwargs)
    if vocab_parallel is None or vocab_parallel is False:
        return layer
    import torch.distributed as dist  # only a vocabulary-parallel build needs it

    return layer.shard_vocabulary(dist.group.WORLD if vocab_parallel is True else vocab_parallel)


def output_side_inputs(name: str, **options: Any) -> frozenset[str]:
    """Which side inputs (``counts``, ``words``, ``vectors``) the layer ``name`` built with
    ``options`` reads: for a caller whose side inputs are dear to compute (word vectors)."""
    return OUTPUTS.get(name).side_inputs(options)


def reference_output() -> str:
    """The registered layer that declares itself the ``reference`` (the exact softmax): what the
    benchmark measures every row against and a language model gets when no layer is named."""
    names = [name for name in OUTPUTS.names() if OUTPUTS.get(name).reference]
    if len(names) != 1:
        raise ConfigError(f"expected one registered output layer with reference=True, found {names}")
    return names[0]


def output_variants() -> list[tuple[str, str, dict[str, Any]]]:
    """``(label, name, options)`` for each registered layer once per declared variant, in
    registration order: ``("hsm[balanced]", "hsm", {"tree": "balanced"})``; a layer without
    variants is one form, labelled by its name, with no options."""
    forms: list[tuple[str, str, dict[str, Any]]] = []
    for name in OUTPUTS.names():
        variants = OUTPUTS.get(name).variants
        if not variants:
            forms.append((name, name, {}))
        forms.extend((f"{name}[{label}]", name, dict(options)) for label, options in variants.items())
    return forms


def retrieval_forms() -> list[tuple[str, str, dict[str, Any]]]:
    """``(label, name, options)`` of each form a registered layer declares for retrieval
    (``retrieval_variants``), registration order: ``("sampled[in_batch]", "sampled", {...})``."""
    return [
        (f"{name}[{label}]" if label else name, name, dict(options))
        for name in OUTPUTS.names()
        for label, options in OUTPUTS.get(name).retrieval_variants.items()
    ]


def side_input_readers(kind: str) -> list[str]:
    """Labels of the forms (:func:`output_variants`) that read the side input ``kind``."""
    return [label for label, name, options in output_variants() if kind in OUTPUTS.get(name).side_inputs(options)]


def list_outputs() -> list[str]:
    """Names of the registered output layers."""
    return OUTPUTS.names()


def list_scorers() -> list[str]:
    """Names of the registered scorers (``scorer=`` of the objective-based layers)."""
    return SCORERS.names()
