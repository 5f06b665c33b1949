"""In-process A/B of two variants of the library on one layer's training step, for the scripts of
the results folders: ``switch(name)`` puts a variant in place (by setting module attributes),
and the bench's own paired timing (:func:`bigvocab.bench.timing.paired_timings`) alternates them.
"""
from __future__ import annotations

from typing import Callable

import torch

from bigvocab.bench.operations import Workload, training_step
from bigvocab.bench.timing import RatioSummary, paired_speedup, paired_timings


def paired_steps(
    layer: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    work: Workload,
    switch: Callable[[str], None],
    reference: str,
    candidate: str,
    *,
    repeats: int = 20,
    steps: int = 5,
    warmup: int = 3,
) -> RatioSummary:
    """``warmup`` untimed steps per variant, then ``repeats`` paired timings, each the mean of
    ``steps`` steps, order alternating: the median of reference time / candidate time (above 1:
    the candidate faster), its quartiles and each side's median seconds per step."""

    def step(variant: str) -> Callable[[], None]:
        def call() -> None:
            switch(variant)
            training_step(layer, optimizer, work)

        return call

    for variant in (reference, candidate):
        for _ in range(warmup):
            step(variant)()
    before, after = paired_timings(step(reference), step(candidate), reference_inner=steps,
                                   candidate_inner=steps, repeats=repeats, device=torch.device("cpu"))
    return paired_speedup(before, after)
