"""Import of the optional approximate-search libraries, with the install hint when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from bigvocab.errors import ConfigError


def installed(module: str) -> bool:
    """Whether ``module`` (``faiss``, ``hnswlib``) imports."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def require(module: str, kind: str) -> ModuleType:
    """The module ``module`` (``faiss``, ``hnswlib``), or a ConfigError naming the extra."""
    if not installed(module):
        raise ConfigError(
            f"index kind {kind!r} needs the {module} package: pip install 'bigvocab[ann]' "
            f"(in a source checkout: pip install -e '.[ann]'), or use kind='ivf', which needs nothing"
        )
    return importlib.import_module(module)
