"""Every name -> constructor registry of bigvocab, and the keyword-checked build they share.

A layer becomes usable from Python, the CLI, the contract tests and the benchmark the moment it is
decorated with ``@OUTPUTS.register("name")``; nothing else needs to know it exists. Each registry
is filled by the package that defines its entries, when that package is imported:

* :data:`OUTPUTS`, :data:`SCORERS`, :data:`TREES`, :data:`ROW_OPTIMIZERS` -- :mod:`bigvocab.outputs`;
* :data:`SAMPLERS` -- :mod:`bigvocab.samplers`;
* :data:`CORPORA` -- :mod:`bigvocab.data`;
* :data:`SIDE_LOADERS` -- :mod:`bigvocab.evaluate` (word vectors);
* :data:`INDEXES` -- :mod:`bigvocab.index`;
* :data:`MODELS` -- :mod:`bigvocab.models`;
* :data:`OPTIMIZERS`, :data:`SCHEDULES` -- :mod:`bigvocab.train`;
* :data:`PEERS` -- :mod:`bigvocab.bench` (the PyTorch layers the benchmark compares against).

The registries live here, below every package, so that a package can look up another's entries
by name without importing it.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from bigvocab.errors import ConfigError, UnknownNameError

F = TypeVar("F", bound=Callable[..., Any])


class Registry:
    """A mapping from names to factories, with helpful errors on unknown names.

    Entries are typed ``Any``: their classes live in the packages above this module, which it
    must not import."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Any] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator that registers a class or factory under ``name`` and returns it unchanged
        (a decorated class keeps its type)."""

        def decorate(factory: F) -> F:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            factory.registered_name = name  # type: ignore[attr-defined]
            return factory

        return decorate

    def unregister(self, name: str) -> None:
        """Remove ``name`` (an entry registered for a while, as a test's throwaway layer)."""
        self.get(name)  # an unknown name names the valid ones
        del self._factories[name]

    def names(self) -> list[str]:
        """The registered names in registration order."""
        return list(self._factories)

    def get(self, name: str) -> Any:
        """The factory for ``name``; an unknown name lists the valid ones and the closest."""
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownNameError(unknown_name_message(self.kind, name, self.names())) from None

    def create(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        """The registered names in registration order."""
        return iter(self.names())

    def describe(self, name: str) -> str:
        """The first paragraph of ``name``'s docstring on one line, without reStructuredText markup."""
        return plain_summary(self.get(name).__doc__ or "")


def plain_summary(docstring: str) -> str:
    """First paragraph of ``docstring``, joined into one line, with ``code``, :role:`~a.b.target`
    and *emphasis* markup reduced to their text."""
    paragraph = " ".join(re.split(r"\n\s*\n", docstring.strip())[0].split())
    paragraph = re.sub(r":[a-z]+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", paragraph)
    # *emphasis* only where the stars stand outside a word, so that 2**24 keeps its power
    return re.sub(
        r"``([^`]+)``|(?<![\w*])\*\*?(?=\S)([^*]+?)(?<=\S)\*\*?(?![\w*])", lambda m: m.group(1) or m.group(2), paragraph
    )


def unknown_name_message(kind: str, name: str, valid: list[str]) -> str:
    """``unknown output layer 'hsn'; did you mean 'hsm'? valid: full, hsm, ...``"""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {name!r}{hint} (valid: {', '.join(valid)})"


def keyword_options(factory: Callable[..., Any]) -> set[str] | None:
    """Keyword names ``factory`` accepts (a class: its constructor's), or None when it takes
    ``**kwargs``."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def build(registry: Registry, name: str, args: tuple, side: Mapping[str, Any], kwargs: dict) -> Any:
    """``registry``'s ``name`` built with positional ``args``, the side inputs it declares among
    ``side`` (None values are dropped) and ``kwargs``, each checked against its options."""
    factory = registry.get(name)
    declared = getattr(factory, "accepted_options", None)
    options = declared(kwargs) if declared is not None else keyword_options(factory)
    if options is not None:
        positional = {"in_features", "num_classes"}
        for key in kwargs:
            if key not in options or key in positional:
                valid = sorted(options - positional - set(side))
                close = difflib.get_close_matches(key, valid, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"{registry.kind} {name!r} does not take {key!r}{hint} (options: {', '.join(valid) or 'none'})"
                )
    given = {key: value for key, value in side.items() if value is not None and (options is None or key in options)}
    return factory(*args, **kwargs, **given)


OUTPUTS: Registry = Registry("output layer")
SCORERS: Registry = Registry("scorer")
SAMPLERS: Registry = Registry("sampler")
TREES: Registry = Registry("tree")
MODELS: Registry = Registry("model")
OPTIMIZERS: Registry = Registry("optimizer")
#: Optimisers applied inside the backward of the sparse output layers (``OutputLayer.fuse_optimizer``).
ROW_OPTIMIZERS: Registry = Registry("fused row optimizer")
SCHEDULES: Registry = Registry("lr schedule")
CORPORA: Registry = Registry("corpus kind")
INDEXES: Registry = Registry("index kind")
PEERS: Registry = Registry("benchmark peer")
#: Side inputs a run gives its output layer from outside its corpus: kind (one of the layers'
#: ``SIDE_INPUTS``) -> ``loader(path, vocab)`` returning the value over the run's vocabulary.
SIDE_LOADERS: Registry = Registry("side input")
CURRICULA: Registry = Registry("curriculum measure")
