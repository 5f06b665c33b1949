"""Helpers for the results folders' scripts that time one layer's training step: the bench's
layer and workload from a row name (:func:`bench_layer`), an in-process A/B of two variants
of the library (:func:`paired_steps`): ``switch(name)`` puts a variant in place (by setting module
attributes), and the bench's own paired timing (:func:`bigvocab.bench.timing.paired_timings`)
alternates them; a check that two variants compute the same step (:func:`assert_same_step`); its
line of output (:func:`print_pair`); steps timed one by one (:func:`step_times`); the same
paired timing of two test-time calls (:func:`paired_calls`); and the median time of a call
(:func:`median_ms`).
"""
from __future__ import annotations

import copy
import statistics
import time
from typing import Callable

import torch

from bigvocab.bench.operations import Workload, make_workload, training_step
from bigvocab.bench.timing import RatioSummary, paired_speedup, paired_timings
from bigvocab.factory import create_output

#: The bench's speed workload: H and N.
HIDDEN, ROWS = 256, 1024


def bench_layer(spec: str, vocab: int) -> tuple[torch.nn.Module, Workload]:
    """The layer of bench row ``spec`` (``nce``, ``hsm[balanced]``, ``neg[shared]``) at V = ``vocab``
    over the bench's Zipf counts, and the bench's workload for it (seed 0, on the CPU)."""
    name, _, variant = spec.partition("[")
    options = {}
    if variant:
        options = {"shared": True} if variant == "shared]" else {"tree": variant[:-1]}
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    torch.manual_seed(0)
    layer = create_output(name, HIDDEN, vocab, counts=counts, **options)
    return layer, make_workload(counts, HIDDEN, ROWS, ROWS, seed=0, device=torch.device("cpu"))


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


def print_pair(label: str, reference: str, candidate: str, summary: RatioSummary) -> None:
    """One line: each variant's median seconds per step and the median ratio [quartiles]."""
    print(f"{label}: {reference} {summary.reference_seconds * 1e3:.2f} ms, {candidate} "
          f"{summary.candidate_seconds * 1e3:.2f} ms, paired ratio {summary.median:.3f} "
          f"[{summary.q1:.3f}-{summary.q3:.3f}]", flush=True)


def paired_calls(reference: Callable[[], object], candidate: Callable[[], object], *, calls: int = 3,
                 repeats: int = 20) -> RatioSummary:
    """The bench's paired timing of two test-time calls (``log_softmax``, ``topk``) as the bench
    times them: ``repeats`` pairs, each the mean of ``calls`` calls after one untimed call, order
    alternating; the median of reference time / candidate time, quartiles and each side's
    median seconds."""
    before, after = paired_timings(reference, candidate, reference_inner=calls, candidate_inner=calls,
                                   repeats=repeats, device=torch.device("cpu"), reference_warmup=True,
                                   candidate_warmup=True)
    return paired_speedup(before, after)


def compare_calls(label: str, reference: Callable[[], object], candidate: Callable[[], object]) -> None:
    """:func:`paired_calls` printed as one line: each side's median ms and the ratio [quartiles]."""
    summary = paired_calls(reference, candidate)
    print(f"{label}: {summary.reference_seconds * 1e3:.2f} ms / {summary.candidate_seconds * 1e3:.2f} ms, "
          f"ratio {summary.median:.3f} [{summary.q1:.3f}-{summary.q3:.3f}]", flush=True)


def median_ms(operation: Callable[[], object], calls: int) -> float:
    """Milliseconds of the median of ``calls`` calls of ``operation``, after one untimed call."""
    operation()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def step_times(layer: torch.nn.Module, optimizer: torch.optim.Optimizer, work: Workload, count: int) -> list[float]:
    """Seconds of each of ``count`` training steps, timed one by one."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        times.append(time.perf_counter() - start)
    return times


def assert_same_step(
    layer: torch.nn.Module, work: Workload, switch: Callable[[str], None], *variants: str, exact: bool = True
) -> None:
    """One step of a copy of ``layer`` under each variant, from the same seed: the losses and the
    parameters' gradients must be equal, exactly (or, not ``exact``, to float32 rounding: variants
    that sum in another order)."""
    results = []
    for variant in variants:
        switch(variant)
        copied = copy.deepcopy(layer)
        torch.manual_seed(1)
        loss = copied.loss(work.hidden, work.target)
        loss.backward()
        grads = [p.grad.to_dense() if p.grad.is_sparse else p.grad for p in copied.parameters() if p.grad is not None]
        results.append([loss.detach(), *grads])
    for other in results[1:]:
        same = torch.equal if exact else (lambda a, b: torch.allclose(a, b, rtol=1e-4, atol=1e-6))
        assert all(same(a, b) for a, b in zip(results[0], other)), f"{variants} must compute the same step"
