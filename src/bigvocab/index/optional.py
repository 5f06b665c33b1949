"""Import of the optional approximate-search libraries, with the install hint when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from bigvocab.errors import ConfigError


def require(module: str, kind: str) -> ModuleType:
    """The module ``module`` (``faiss``, ``hnswlib``), or a ConfigError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"index kind {kind!r} needs the {module} package: pip install 'bigvocab[ann]' "
            f"(or use kind='lsh', which needs nothing)"
        ) from None
