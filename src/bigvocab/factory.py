"""``create_output`` / ``create_sampler``: registry lookups that check keyword arguments.

A misspelt keyword (``num_sample=``) or one the method does not take gets a :class:`ConfigError`
naming the method's real options, instead of Python's bare ``unexpected keyword argument``.
``counts`` is passed only to the methods that read it, so callers can give it to every layer.
"""
from __future__ import annotations

import difflib
import inspect
from typing import Any, Callable, Optional, Sequence

from bigvocab.errors import ConfigError
from bigvocab.registry import OUTPUTS, SAMPLERS, Registry


def _keyword_options(factory: Callable[..., Any]) -> Optional[set[str]]:
    """Keyword names ``factory`` accepts, or None when it takes ``**kwargs``."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _build(registry: Registry, name: str, args: tuple, counts: Optional[Sequence[int]], kwargs: dict) -> Any:
    factory = registry.get(name)
    options = _keyword_options(factory)
    if options is not None:
        positional = set(list(inspect.signature(factory).parameters)[: len(args)])
        for key in kwargs:
            if key not in options or key in positional:
                valid = sorted(options - positional - {"counts"})
                close = difflib.get_close_matches(key, valid, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"{registry.kind} {name!r} does not take {key!r}{hint} "
                    f"(options: {', '.join(valid) or 'none'})"
                )
    if counts is not None and (options is None or "counts" in options):
        kwargs = {**kwargs, "counts": counts}
    return factory(*args, **kwargs)


def create_output(name: str, in_features: int, num_classes: int, *, counts=None, **kwargs: Any):
    """Build the registered output layer ``name`` (see :func:`list_outputs`).

    Args:
        name: e.g. ``"full"``, ``"hsm"``, ``"sampled"``.
        in_features: H, the size of the hidden state fed to the layer.
        num_classes: V, the vocabulary size.
        counts: training frequencies of the classes, ids sorted by descending frequency; given
            only to the layers that use them (Huffman trees, unigram samplers, frequency bands).
        **kwargs: the layer's own options (``num_samples``, ``sampler``, ``tree``, ``cutoffs``...).
    """
    return _build(OUTPUTS, name, (in_features, num_classes), counts, kwargs)


def create_sampler(name: str, num_classes: int, *, counts=None, **kwargs: Any):
    """Build the registered sampler ``name`` (see :func:`list_samplers`)."""
    return _build(SAMPLERS, name, (num_classes,), counts, kwargs)


def list_outputs() -> list[str]:
    """Names of the registered output layers."""
    return OUTPUTS.names()


def list_samplers() -> list[str]:
    """Names of the registered samplers."""
    return SAMPLERS.names()
