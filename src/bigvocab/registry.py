"""Name -> constructor registries for output layers, scorers, samplers, models and hsm trees.

A layer becomes usable from Python, the CLI, the contract tests and the benchmark the moment it is
decorated with ``@OUTPUTS.register("name")``; nothing else needs to know it exists.
"""
from __future__ import annotations

import difflib
import inspect
from typing import Any, Callable, Generic, Optional, TypeVar

from bigvocab.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to factories, with helpful errors on unknown names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator that registers a class or factory under ``name``."""

        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            factory.registered_name = name  # type: ignore[attr-defined]
            return factory

        return decorate

    def names(self) -> list[str]:
        """The registered names in registration order."""
        return list(self._factories)

    def get(self, name: str) -> Callable[..., T]:
        """The factory for ``name``; an unknown name lists the valid ones and the closest."""
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownNameError(unknown_name_message(self.kind, name, self.names())) from None

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.get(name)(*args, **kwargs)

    def __contains__(self, name: object) -> bool:
        return name in self._factories


def unknown_name_message(kind: str, name: str, valid: list[str]) -> str:
    """``unknown output layer 'hsn'; did you mean 'hsm'? valid: full, hsm, ...``"""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {name!r}{hint} (valid: {', '.join(valid)})"


def keyword_options(factory: Callable[..., Any]) -> Optional[set[str]]:
    """Keyword names ``factory`` accepts (a class: its constructor's), or None when it takes
    ``**kwargs``."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


OUTPUTS: Registry = Registry("output layer")
SCORERS: Registry = Registry("scorer")
SAMPLERS: Registry = Registry("sampler")
TREES: Registry = Registry("tree")
MODELS: Registry = Registry("model")
