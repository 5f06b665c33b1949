"""``bigvocab bench --ann``: approximate top-10 of a linear softmax, recall against speed.

Approximate top-k by maximum-inner-product search (Vijayanarasimhan et al. 2015; the MIPS
transform of Shrivastava & Li 2014). For each index kind of :mod:`bigvocab.index` and each point
of its parameter sweep, over one of three kinds of weights (``--ann-weights``):

* ``clustered``: synthetic weights shaped like trained ones (:func:`clustered_weights`),
* ``fitted``: a ``full`` layer fitted to the test rows, as the speed bench fits a layer before its
  fitted top-k (:func:`bigvocab.bench.harness.operations.fitted_copy`; the queries are those rows),
* a checkpoint of ``bigvocab train``: its output layer, queried with the hidden states of its
  corpus's test split,

this measures

* recall@k: the fraction of the exact top-k ids the index path returns (k = 10), and P@1
  agreement: the fraction of queries whose best id is the exact best,
* the speed-up of ``layer.topk(h, k, index=index)`` (search plus exact rescoring of the
  candidates, exact logits) over the exact ``layer.topk(h, k)`` of ``full``, timed in alternating
  pairs (:func:`bigvocab.bench.harness.timing.paired_timings`) and summarised as the median paired
  ratio; and over exact ``log_softmax`` + ``topk``, through the paired ratio of the two exact
  paths, timed once,
* the build time and the bytes the index holds.

The index path's default returns exact logits: exact log-probabilities (``normalise=True``) add log
Z, one streamed pass over all V rows, which costs what the exact top-k costs (timed once, on the
default kind). ``screening`` is built from ``contexts``: hidden states of the training data
(a checkpoint's training split; for the synthetic weights, more draws of the queries' law), never
the queries themselves. On i.i.d. Gaussian weights no index has structure to exploit; trained output rows
cluster by meaning and their norms and biases follow frequency, which is what
:func:`clustered_weights` imitates and what a checkpoint shows for real.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import torch
from torch import Tensor

import bigvocab
from bigvocab.bench.harness.config import parse_sizes
from bigvocab.bench.harness.formatting import speedup
from bigvocab.bench.harness.machine import describe_machine
from bigvocab.bench.harness.operations import fitted_copy, make_workload
from bigvocab.bench.harness.plots import MISSING_MATPLOTLIB, write_recall_plot
from bigvocab.bench.harness.side_data import synthetic_side_data
from bigvocab.bench.harness.timing import paired_speedup, paired_timings
from bigvocab.data.xmc import LabelledRows
from bigvocab.index import default_kind
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.factory import reference_output

#: (build options, list of search options) per kind: each build is searched at every point.
SWEEPS: dict[str, list[tuple[dict, list[dict]]]] = {
    "ivf": [
        ({}, [{"nprobe": p, "candidates": 10} for p in (1, 2, 4, 8, 16, 32)] + [{"nprobe": 16, "candidates": 40}]),
    ],
    "svd": [
        ({}, [{"rank": r, "candidates": c} for r in (4, 8, 16, 32) for c in (64, 256)]),
    ],
    "screening": [
        ({"clusters": 64}, [{"budget": b} for b in (100, 300, 1000, 3000)]),
        ({"clusters": 256}, [{"budget": b} for b in (100, 300, 1000, 3000)]),
    ],
    "faiss-ivf": [
        (
            {},
            [{"nprobe": p, "candidates": 10} for p in (1, 2, 4, 8, 16, 32)] + [{"nprobe": 16, "candidates": 40}],
        ),
    ],
    "lsh": [
        ({"bits": 8, "tables": 16}, [{"probes": 0}, {"probes": 2}]),
        ({"bits": 12, "tables": 32}, [{"probes": 0}, {"probes": 4}, {"probes": 8}]),
    ],
    "hnswlib": [
        ({"M": 16, "ef_construction": 40}, [{"ef_search": e, "candidates": 10} for e in (10, 20, 40, 80, 160, 320)]),
    ],
    "faiss-hnsw": [
        ({"M": 16, "ef_construction": 40}, [{"ef_search": e, "candidates": 10} for e in (10, 20, 40, 80, 160, 320)]),
    ],
}


@dataclass
class AnnConfig:
    """What ``bigvocab bench --ann`` measures (defaults: V = 1M, H = 256)."""

    vocab_size: int = 1_000_000
    hidden: int = 256
    #: queries timed per call (the rows of one test batch).
    queries: int = 256
    k: int = 10
    #: training hidden states that ``screening`` is built from.
    contexts: int = 4096
    repeats: int = 3
    clusters: int = 1000
    seed: int = 0
    kinds: list[str] = field(default_factory=lambda: list(SWEEPS))
    out: Path = Path("bench-out/ann")
    #: ``"clustered"``, ``"fitted"`` or the path of a checkpoint (see :func:`ann_inputs`).
    weights: str = "clustered"


@dataclass
class Synthetic:
    """Trained-like weights and hidden states (see :func:`clustered_weights`)."""

    weight: Tensor
    bias: Tensor
    queries: Tensor
    contexts: Tensor
    recipe: str


@dataclass
class AnnInputs:
    """The layer whose top-k the indexes approximate, its queries (N, H), training hidden states
    (M, H) for the kinds that learn from contexts, and how they were made."""

    layer: OutputLayer
    queries: Tensor
    contexts: Tensor
    recipe: str


def clustered_weights(config: AnnConfig) -> Synthetic:
    """Output rows and hidden states with the structure of a trained softmax, stated exactly:

    * word w (rank r = 1..V, Zipf count c_w = 10^7 / r) belongs to one of ``clusters`` groups,
      drawn uniformly; group g has a random unit direction mu_g;
    * its row is W_w = n_w · normalise(mu_g + xi_w), xi_w ~ N(0, I/H), so a row is at about 45
      degrees from its group's direction (cos ~ 0.71) and in random directions from other groups';
    * its norm grows with frequency, n_w = 0.5 + 0.15 ln c_w (0.8 to 2.9), and its bias is half the
      unigram log-probability, b_w = 0.5 ln(c_w / sum c), as trained rows and biases do;
    * a hidden state predicts one group: h = 6 mu_g + zeta, zeta ~ N(0, I/H), g uniform; the
      queries and the ``contexts`` (training hidden states) are independent draws of it.
    """
    generator = torch.Generator().manual_seed(config.seed)
    vocab, hidden = config.vocab_size, config.hidden
    counts = 1e7 / torch.arange(1, vocab + 1, dtype=torch.float64)
    centres = torch.nn.functional.normalize(torch.randn(config.clusters, hidden, generator=generator), dim=1)
    group = torch.randint(0, config.clusters, (vocab,), generator=generator)
    weight = torch.empty(vocab, hidden)
    for start in range(0, vocab, 1 << 16):
        stop = min(vocab, start + (1 << 16))
        noise = torch.randn(stop - start, hidden, generator=generator) / math.sqrt(hidden)
        weight[start:stop] = torch.nn.functional.normalize(centres[group[start:stop]] + noise, dim=1)
    weight.mul_((0.5 + 0.15 * counts.log()).float()[:, None])
    bias = (0.5 * (counts / counts.sum()).log()).float()

    def hidden_states(count: int) -> Tensor:
        asked = torch.randint(0, config.clusters, (count,), generator=generator)
        return 6 * centres[asked] + torch.randn(count, hidden, generator=generator) / math.sqrt(hidden)

    queries = hidden_states(config.queries)
    contexts = hidden_states(config.contexts)
    recipe = (
        f"V = {vocab:,}, H = {hidden}, {config.clusters} groups; W_w = (0.5 + 0.15 ln c_w) normalise(mu_g + xi), "
        f"xi ~ N(0, I/H); b_w = 0.5 ln(c_w / sum c), c_w = 1e7 / rank; queries h = 6 mu_g + N(0, I/H), seed {config.seed}"
    )
    return Synthetic(weight=weight, bias=bias, queries=queries, contexts=contexts, recipe=recipe)


def clustered_inputs(config: AnnConfig) -> AnnInputs:
    """A ``full`` layer holding :func:`clustered_weights`, and their queries."""
    data = clustered_weights(config)
    layer = bigvocab.create_output(reference_output(), config.hidden, config.vocab_size).eval()
    with torch.no_grad():
        layer.weight.copy_(data.weight)
        layer.bias.copy_(data.bias)
    return AnnInputs(layer, data.queries, data.contexts, data.recipe)


def fitted_inputs(config: AnnConfig) -> AnnInputs:
    """A ``full`` layer fitted to ``queries`` test rows of the speed bench's workload (Gaussian
    hidden states, targets drawn from the synthetic language's unigram), the way the speed bench
    fits a search-based layer before timing its top-k; the queries are those rows, and so are the
    contexts (they are its training data)."""
    side = synthetic_side_data(config.vocab_size, seed=config.seed)
    workload = make_workload(
        side.counts, config.hidden, config.queries, config.queries, seed=config.seed, device=torch.device("cpu")
    )
    torch.manual_seed(config.seed)
    layer = bigvocab.create_output(reference_output(), config.hidden, config.vocab_size, counts=side.counts)
    fitted, target_probability = fitted_copy(layer, workload)
    del layer
    recipe = (
        f"V = {config.vocab_size:,}, H = {config.hidden}: `{reference_output()}` initialised under seed {config.seed} "
        "and fitted to "
        f"the {config.queries} queries (h ~ N(0, I), targets drawn from the synthetic unigram) by "
        f"bigvocab.bench.harness.operations.fitted_copy; mean target probability after fitting {target_probability:.3f}"
    )
    queries = workload.eval_hidden.detach()
    return AnnInputs(fitted, queries, queries, recipe)


def checkpoint_inputs(config: AnnConfig, path: Path) -> AnnInputs:
    """The output layer of the checkpoint at ``path``, queried with ``queries`` hidden states drawn
    at random (seeded) from those of its corpus's test split; ``contexts`` drawn likewise from
    those of the first 8·contexts tokens of its training split."""
    from bigvocab.checkpoint import load_model
    from bigvocab.data.corpora import load_corpus
    from bigvocab.evaluate.perplexity import eval_batches

    model, vocab, checkpoint = load_model(path)
    spec = (checkpoint.get("meta") or {}).get("corpus")
    if not spec:
        raise bigvocab.ConfigError(f"checkpoint {str(path)!r} does not name its corpus: no test hidden states")
    corpus = load_corpus(spec, vocab=vocab, progress=False)
    generator = torch.Generator().manual_seed(config.seed)

    def sample(ids: Tensor | LabelledRows, count: int) -> Tensor:
        states = torch.cat([model.features(batch) for batch in eval_batches(model, ids, 1024)])
        return states[torch.randperm(states.shape[0], generator=generator)[:count]].contiguous()

    def head(split: Tensor | LabelledRows, count: int) -> Tensor | LabelledRows:
        """The first ``count`` tokens of a stream, or rows of a labelled (retrieval) corpus."""
        if isinstance(split, LabelledRows):
            return split.subset(torch.arange(min(count, len(split))))
        return split[:count]

    hidden = sample(corpus.test, config.queries)
    contexts = sample(head(corpus.train, 8 * config.contexts), config.contexts)
    layer = model.output
    config.vocab_size, config.hidden = layer.num_classes, layer.in_features
    recipe = (
        f"the `{type(layer).__name__}` output layer of {path} (V = {layer.num_classes:,}, H = {layer.in_features}), "
        f"trained on {spec}; queries: {hidden.shape[0]} hidden states of its test split, contexts: "
        f"{contexts.shape[0]:,} of its training split, drawn at random under seed {config.seed}"
    )
    return AnnInputs(layer, hidden, contexts, recipe)


def ann_inputs(config: AnnConfig) -> AnnInputs:
    """The layer and queries that ``config.weights`` names."""
    if config.weights == "clustered":
        return clustered_inputs(config)
    if config.weights == "fitted":
        return fitted_inputs(config)
    path = Path(config.weights)
    if not path.is_file():
        raise bigvocab.ConfigError(f"--ann-weights takes clustered, fitted or a checkpoint file; {str(path)!r} is none")
    return checkpoint_inputs(config, path)


def recall(found: Tensor, exact: Tensor) -> float:
    """Mean over queries of |found ∩ exact| / k, for (N, k) id matrices."""
    hits = (found[:, :, None] == exact[:, None, :]).any(2).sum()
    return float(hits) / exact.numel()


def run_ann(
    config: AnnConfig, stream: TextIO | None = None, progress: Callable[[dict], None] | None = None
) -> dict[str, Any]:
    """Measure every kind's sweep; returns the rows and what produced them. ``progress`` gets
    each row as it is measured (the CLI appends it to ``rows.jsonl``, so a long run that is
    stopped keeps what it measured)."""
    started = time.perf_counter()
    inputs = ann_inputs(config)
    # Test time: no autograd graph is kept for the layer's parameters.
    layer, queries, k = inputs.layer.eval().requires_grad_(False), inputs.queries, config.k
    _log(stream, f"weights: {inputs.recipe}")
    _, exact_ids = layer.topk(queries, k)
    log_softmax = _time_log_softmax(layer, queries, config)
    _log(stream, f"exact log_softmax + topk takes {log_softmax['ratio']:.2f}x the exact topk")
    rows: list[dict] = []
    log_z: dict[str, Any] | None = None
    for kind in config.kinds:
        for build_options, points in SWEEPS[kind]:
            given = {**build_options, "contexts": inputs.contexts} if kind == "screening" else build_options
            index = layer.build_index(kind=kind, **given)
            memory = index.memory_bytes()
            _log(
                stream, f"{kind} {index.build_options}: built in {index.build_seconds:.1f} s, {memory / 2**20:.0f} MiB"
            )
            for search in points:
                index.tune(**search)
                _, ids = layer.topk(queries, k, index=index)
                reference, candidate = paired_timings(
                    lambda: layer.topk(queries, k),
                    lambda: layer.topk(queries, k, index=index),  # noqa: B023, F821  (timed in this iteration)
                    reference_inner=1,
                    candidate_inner=1,
                    repeats=config.repeats,
                    device=queries.device,
                )
                ratio = paired_speedup(reference, candidate)
                row = {
                    "kind": kind,
                    "build": dict(index.build_options),
                    "search": index.search_options(),
                    "build_seconds": index.build_seconds,
                    "memory_bytes": memory,
                    "recall": recall(ids, exact_ids),
                    "p_at_1": float((ids[:, 0] == exact_ids[:, 0]).double().mean()),
                    "speedup": ratio.median,
                    "speedup_min": ratio.min,
                    "speedup_max": ratio.max,
                    "speedup_log_softmax": ratio.median * log_softmax["ratio"],
                    "exact_seconds": ratio.reference_seconds,
                    "index_seconds": ratio.candidate_seconds,
                    "fallbacks": index.last_fallbacks,
                }
                rows.append(row)
                _log(
                    stream,
                    f"  {search}: recall@{k} {row['recall']:.3f}, P@1 {row['p_at_1']:.3f}, {speedup(row['speedup'])}, "
                    f"fallbacks {row['fallbacks']}",
                )
                if progress is not None:
                    progress(row)
                if log_z is None and kind == default_kind() and not build_options and row["recall"] >= 0.95:
                    log_z = _time_log_z(layer, queries, config, index)
            del index
    if log_z is None:
        log_z = _time_log_z(layer, queries, config, layer.build_index())
    return {
        "config": {**asdict(config), "out": str(config.out)},
        "weights": inputs.recipe,
        "machine": describe_machine(queries.device),
        "rows": rows,
        "log_softmax": log_softmax,
        "log_z": log_z,
        "wall_seconds": time.perf_counter() - started,
    }


def _time_log_softmax(layer, queries: Tensor, config: AnnConfig) -> dict[str, float]:
    """How much dearer exact ``log_softmax`` + ``topk`` is than the exact ``topk``: paired."""
    reference, candidate = paired_timings(
        lambda: layer.log_softmax(queries).topk(config.k, dim=1),
        lambda: layer.topk(queries, config.k),
        reference_inner=1,
        candidate_inner=1,
        repeats=config.repeats,
        device=queries.device,
    )
    ratio = paired_speedup(reference, candidate)
    return {
        "ratio": ratio.median,
        "log_softmax_seconds": ratio.reference_seconds,
        "topk_seconds": ratio.candidate_seconds,
    }


def _time_log_z(layer, queries: Tensor, config: AnnConfig, index) -> dict[str, Any]:
    """The default kind's path with exact log-probabilities (``normalise=True``: its search and
    one log Z pass) and without (its default), each paired with the exact top-k: at the first
    point of its sweep that reaches recall 0.95, else with its default options."""
    timed = {}
    for normalise in (False, True):
        reference, candidate = paired_timings(
            lambda: layer.topk(queries, config.k),
            lambda: layer.topk(queries, config.k, index=index, normalise=normalise),  # noqa: B023
            reference_inner=1,
            candidate_inner=1,
            repeats=config.repeats,
            device=queries.device,
        )
        timed[normalise] = paired_speedup(reference, candidate)
    return {
        "kind": index.kind,
        "options": index.search_options(),
        "speedup": timed[True].median,
        "speedup_logits": timed[False].median,
        "exact_seconds": timed[True].reference_seconds,
        "normalised_seconds": timed[True].candidate_seconds,
        "logits_seconds": timed[False].candidate_seconds,
    }


def _log(stream: TextIO | None, line: str) -> None:
    if stream is not None:
        print(line, file=stream, flush=True)


def report_markdown(results: dict[str, Any], command: str) -> str:
    """The recall/speed table, one row per sweep point, and how it was made."""
    config, machine = results["config"], results["machine"]
    log_softmax, log_z = results["log_softmax"], results["log_z"]
    lines = [
        f"# Approximate top-{config['k']}: recall against speed-up over exact `{reference_output()}` top-{config['k']}",
        "",
        f"Command: `{command}` ({results['wall_seconds'] / 60:.0f} min).",
        f"Machine: {machine['cpu']}, {machine['usable_cores']} usable cores, torch {machine['torch']}, "
        f"{machine['torch_threads']} thread(s), {machine['date']}.",
        f"Weights: {results['weights']}.",
        f"Timing: {config['queries']} queries per call; each point is {config['repeats']} pairs (exact, index) "
        "taken back to back in alternating order; the speed-up is the median of the paired ratios (min-max in "
        "brackets). The index path is search + exact rescoring of the candidates, returning exact logits "
        "(`topk(h, k, index=index)`). `× log_softmax`: the speed-up over exact `log_softmax` + `topk`, which took "
        f"{log_softmax['ratio']:.2f}x the exact top-k ({log_softmax['log_softmax_seconds']:.3f} s against "
        f"{log_softmax['topk_seconds']:.3f} s, paired). P@1: queries whose best id is the exact best. "
        "`fallbacks`: queries given fewer than k candidates, answered by the exact top-k instead (their cost is "
        "in the timing, their ids in the recall).",
        "",
        "| kind | build options | search | recall@10 | P@1 | speed-up | × log_softmax | exact s | index s "
        "| build s | memory MiB | fallbacks |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        build = ", ".join(f"{key}={value}" for key, value in row["build"].items())
        search = ", ".join(f"{key}={value}" for key, value in row["search"].items())
        lines.append(
            f"| {row['kind']} | {build} | {search} | {row['recall']:.3f} | {row['p_at_1']:.3f} | "
            f"{speedup(row['speedup'])} [{speedup(row['speedup_min'])[:-1]}–{speedup(row['speedup_max'])[:-1]}] | "
            f"{speedup(row['speedup_log_softmax'])} | {row['exact_seconds']:.3f} | {row['index_seconds']:.4f} | "
            f"{row['build_seconds']:.1f} | {row['memory_bytes'] / 2**20:.0f} | {row['fallbacks']} |"
        )
    lines += [
        "",
        f"The default kind (`{log_z['kind']}`, "
        f"{', '.join(f'{key}={value}' for key, value in log_z['options'].items())}) against the exact top-k: "
        f"{speedup(log_z['speedup_logits'])} returning exact logits (the default, {log_z['logits_seconds']:.4f} s), "
        f"{speedup(log_z['speedup'])} with exact log-probabilities (`normalise=True`, {log_z['normalised_seconds']:.3f} s "
        f"against {log_z['exact_seconds']:.3f} s): the log Z pass over all V rows costs the matrix product of the "
        "exact top-k.",
    ]
    return "\n".join(lines) + "\n"


def main(args) -> int:
    """``bigvocab bench --ann``: run, print the table, write report.md and results.json."""
    config = AnnConfig(
        out=Path(getattr(args, "out", None) or "bench-out/ann"),
        weights=getattr(args, "ann_weights", None) or "clustered",
    )
    if getattr(args, "vocab_sizes", None) is not None:
        config.vocab_size = parse_sizes(args.vocab_sizes)[-1]
    for name, key in (("hidden", "hidden"), ("batch", "queries"), ("repeats", "repeats"), ("seed", "seed")):
        value = getattr(args, name, None)
        if value is not None:
            setattr(config, key, value)
    if getattr(args, "outputs", None):
        config.kinds = [kind for kind in args.outputs.split(",") if kind]
        unknown = [kind for kind in config.kinds if kind not in SWEEPS]
        if unknown:
            raise bigvocab.ConfigError(
                f"--outputs with --ann takes index kinds {', '.join(SWEEPS)}, got {', '.join(unknown)}"
            )
    config.out.mkdir(parents=True, exist_ok=True)
    partial = config.out / "rows.jsonl"
    partial.write_text("")

    def append(row: dict) -> None:
        with partial.open("a") as handle:
            handle.write(json.dumps(row) + "\n")

    results = run_ann(config, stream=sys.stdout, progress=append)
    command = "bigvocab bench --ann " + " ".join(sys.argv[sys.argv.index("--ann") + 1 :] if "--ann" in sys.argv else [])
    markdown = report_markdown(results, command.strip())
    (config.out / "report.md").write_text(markdown)
    (config.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    plot = write_recall_plot(results, config.out / "recall_vs_speedup.png")
    print(markdown)
    print(f"wrote {config.out / 'report.md'} and {config.out / 'results.json'}")
    print(f"wrote {plot}" if plot is not None else MISSING_MATPLOTLIB)
    return 0
