"""Which rows the benchmark runs: every registered layer (once per declared variant, e.g. hsm's
trees) plus the registered peers.

Rows are read from the registries and the layers' ``variants`` at run time, so a newly
registered layer appears in the table without any change here. ``--outputs`` patterns
(:mod:`fnmatch`, comma-separated) select among them; the layer that declares itself the
``reference`` (the exact softmax) is always run because every ratio is taken against it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

from bigvocab.bench.harness import peers  # noqa: F401  (registers the peers)
from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import output_variants, reference_output
from bigvocab.registry import OUTPUTS, PEERS, unknown_name_message


@dataclass(frozen=True)
class Candidate:
    """One row: ``label`` as shown, ``method`` as registered (or a peer name), extra ``options``;
    ``repeat`` r > 0: a quality run of the reference again, with the run's seed + r."""

    label: str
    method: str
    kind: str = "layer"
    options: dict = field(default_factory=dict, hash=False, compare=False)
    repeat: int = 0

    @property
    def is_reference(self) -> bool:
        return self.kind == "layer" and self.label == reference_output()

    @property
    def layer_class(self) -> type[OutputLayer]:
        """The registered class the row builds, for its declarations."""
        return (PEERS if self.kind == "peer" else OUTPUTS).get(self.method)


def all_candidates() -> list[Candidate]:
    """Every row the registry and the peer list offer, registration order, peers last."""
    rows = [Candidate(label, name, options=options) for label, name, options in output_variants()]
    rows.extend(Candidate(name, name, kind="peer") for name in PEERS.names())
    return rows


def _matches(pattern: str, candidate: Candidate) -> bool:
    # An exact label first: "hsm[class]" would otherwise be read as a character class.
    return pattern == candidate.label or any(
        fnmatch.fnmatchcase(name, pattern) for name in (candidate.label, candidate.method)
    )


def select_candidates(patterns: Sequence[str] | None, candidates: list[Candidate] | None = None) -> list[Candidate]:
    """The rows matching any of ``patterns`` (all when None), with the reference layer first.

    A pattern matching nothing is a :class:`ConfigError` naming the closest rows.
    """
    pool = all_candidates() if candidates is None else candidates
    if patterns is None:
        chosen = list(pool)
    else:
        labels = [c.label for c in pool]
        for pattern in patterns:
            if not any(_matches(pattern, c) for c in pool):
                raise ConfigError(unknown_name_message("output layer pattern", pattern, labels))
        chosen = [c for c in pool if any(_matches(p, c) for p in patterns)]
    reference = [c for c in pool if c.is_reference]
    if not reference:
        raise ConfigError(
            f"the reference layer {reference_output()!r} is not among the rows; every ratio is taken against it"
        )
    return reference + [c for c in chosen if not c.is_reference]


def candidate_by_label(label: str) -> Candidate:
    """The row called ``label`` (used by the memory worker, which receives labels)."""
    for candidate in all_candidates():
        if candidate.label == label:
            return candidate
    raise ConfigError(unknown_name_message("benchmark row", label, [c.label for c in all_candidates()]))
