"""``create_sampler``: a registry lookup that checks keyword arguments (as ``create_output``)."""

from __future__ import annotations

from typing import Any

from bigvocab.registry import SAMPLERS, build


def create_sampler(name: str, num_classes: int, *, counts=None, **kwargs: Any):
    """Build the registered sampler ``name`` (see :func:`list_samplers`)."""
    return build(SAMPLERS, name, (num_classes,), {"counts": counts}, kwargs)


def list_samplers() -> list[str]:
    """Names of the registered samplers."""
    return SAMPLERS.names()
