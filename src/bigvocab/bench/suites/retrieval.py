"""``bigvocab bench --retrieval``: P@1, P@5, recall@10 and PSP@5 of every retrieval objective
against training time, on a planted task whose optimum is known.

The task is :class:`~bigvocab.data.synthetic_xmc.SyntheticXMC` at each item count (labels dealt
into groups of ``group_size``, Zipfian popularity), so every row is also read against the
Bayes-optimal P@k no model can beat. Each row trains the same ``xmc`` bag-of-features encoder
(:class:`~bigvocab.models.xmc.XMCModel`) from the same seed on the same rows, with one output
layer in one of the forms it declares for retrieval (``retrieval_variants``: the exact softmax,
sampled softmax with and without the log-Q correction over sampled, in-batch and mixed
candidates, NCE, negative sampling, one-vs-all logistic, trees, adaptive), for the same number of
steps (``steps``), and is evaluated by exact top-10 on the held-out rows at the same ``checkpoints``
(fractions of the steps); a row whose training time passes ``budget_seconds`` stops at the
checkpoint where it does and says so (the reference row has its own ``reference_budget_seconds``,
since every row is compared with it), and every row is compared with the reference layer at each
checkpoint both reached, i.e. after the same number of steps. Evaluation is not counted as
training time. ``jobs`` > 1 trains that many rows at once, each in its own process with
``threads`` threads. When ``libpecos`` is installed (``pip install 'bigvocab[pecos]'``), PECOS's
XR-Linear (Yu et al. 2022, "PECOS: Prediction for Enormous and Correlated Output Spaces", JMLR)
is trained on the same rows, one thread, as a row beside them, the way PECOS's documentation
trains it: PIFA label embeddings, a hierarchical k-means label tree, then the linear rankers.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import json
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import torch
from torch import Tensor

from bigvocab.bench.harness.config import parse_sizes
from bigvocab.bench.harness.machine import describe_machine
from bigvocab.bench.harness.selection import Candidate
from bigvocab.bench.harness.side_data import SideData, build_layer
from bigvocab.data.synthetic_xmc import SyntheticXMC
from bigvocab.data.xmc import LabelledRows
from bigvocab.errors import ConfigError
from bigvocab.evaluate.retrieval import jain_propensities, precision_per_row, ranked_predictions, retrieval_metrics
from bigvocab.models import XMCModel
from bigvocab.outputs.factory import reference_output, retrieval_forms

#: Metrics a row reports (and the plot draws), and the ranked predictions they read.
METRICS = ("P@1", "P@5", "recall@10", "PSP@5", "nDCG@5")
TOP = 10
#: The key of a checkpoint's per-row P@1 (a string of 0s and 1s, one per held-out row, in order):
#: what pairs two rows' P@1 on the same held-out rows for the ratio's interval.
P1_ROWS = "P@1 rows"
PECOS = "pecos[xr-linear]"
PECOS_MISSING = "PECOS not installed (pip install 'bigvocab[pecos]', which needs numpy < 2): no XR-Linear row"


@dataclass
class RetrievalConfig:
    """What ``bench --retrieval`` runs. Its defaults answer Yi et al.'s question at the rows'
    plateau (``docs/design/retrieval-bench.md`` gives the reasons and the figures): batches of
    1024, where in-batch negatives are used; 100,000 training rows, enough that nearly every
    held-out row's group is seen in training at 1M items; 600 steps, six epochs, past the point
    where the uncorrected in-batch softmax peaks; checkpoints doubling from 25 steps, so the
    expensive rows, which stop at their budget, are still compared with the others after the same
    examples."""

    item_counts: list[int] = field(default_factory=lambda: [100_000, 1_000_000])
    #: labels per planted group (the task has item_count / group_size groups).
    group_size: int = 100
    train_rows: int = 100_000
    test_rows: int = 1000
    #: H, the bag and the output layer's input.
    hidden: int = 32
    batch_size: int = 1024
    #: training steps of every row.
    steps: int = 600
    #: a row stops at the first checkpoint after this many seconds of training.
    budget_seconds: float = 300.0
    #: the reference row's budget (None: ``budget_seconds``). Every row is compared with the
    #: reference after the same steps, so the comparison reaches only as far as the reference does.
    reference_budget_seconds: float | None = None
    #: fractions of the steps at which the held-out rows are evaluated (repeats are evaluated once).
    checkpoints: tuple[float, ...] = (1 / 24, 1 / 12, 1 / 6, 1 / 3, 2 / 3, 1.0)
    num_samples: int = 1024
    optimizer: str = "adam"
    lr: float = 0.01
    seed: int = 0
    threads: int = 1
    #: rows trained at once, each in its own process with ``threads`` threads.
    jobs: int = 1
    #: row labels or fnmatch patterns; None: every declared retrieval form and the PECOS peer.
    rows: list[str] | None = None
    out: Path = Path("bench-out/retrieval")


@dataclass
class RetrievalRow:
    """One (items, approach) result; ``curve`` holds the metrics at each checkpoint."""

    items: int
    approach: str
    method: str
    options: dict = field(default_factory=dict)
    status: str = "pending"
    error: str = ""
    steps: int = 0
    train_seconds: float = 0.0
    seconds_per_step: float | None = None
    eval_seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    curve: list[dict[str, Any]] = field(default_factory=list)


def retrieval_candidates(patterns: list[str] | None) -> list[Candidate]:
    """Every declared retrieval form (:func:`~bigvocab.outputs.factory.retrieval_forms`), or those
    matching ``patterns``, the reference layer first."""
    forms = [Candidate(label, name, options=options) for label, name, options in retrieval_forms()]
    if patterns is not None:
        forms = [c for c in forms if any(_matches(pattern, c.label) for pattern in patterns)]
    return sorted(forms, key=lambda c: not c.is_reference)


def _matches(pattern: str, label: str) -> bool:
    # an exact label first: "hsm[huffman]" would otherwise be read as a character class
    return pattern == label or fnmatch.fnmatchcase(label, pattern)


def make_task(items: int, config: RetrievalConfig) -> tuple[SyntheticXMC, LabelledRows, LabelledRows]:
    """The planted task with ``items`` labels, its training rows and its held-out rows."""
    task = SyntheticXMC(items, max(1, items // config.group_size), seed=config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    train, _ = task.sample(config.train_rows, generator)
    test, _ = task.sample(config.test_rows, generator)
    return task, train, test


def evaluate_rows(
    rank: Callable[[LabelledRows], tuple[Tensor, Tensor]], test: LabelledRows, propensities: Tensor
) -> dict[str, Any]:
    """:data:`METRICS` of ``rank(test)`` ((N, TOP) ranked label ids and the (N, T) true labels),
    and each held-out row's P@1 under :data:`P1_ROWS`."""
    ranked, targets = rank(test)
    metrics = retrieval_metrics(ranked, targets, ks=(1, 5, 10), propensities=propensities)
    hits = precision_per_row(ranked, targets, 1)
    return {**{name: metrics[name] for name in METRICS}, P1_ROWS: "".join("1" if hit else "0" for hit in hits.tolist())}


def paired_ratio_interval(rows: str, reference_rows: str) -> float | None:
    """Half-width of the 95% interval of P@1 over the reference's P@1 on the same held-out rows
    (two :data:`P1_ROWS` strings), by the delta method on the paired differences: with a_i, b_i
    the rows' hits and r = mean(a) / mean(b), the standard error is sd(a_i - r b_i) / (sqrt(n)
    mean(b)). None when the strings do not pair (other held-out rows) or the reference has no hit."""
    if len(rows) != len(reference_rows) or len(rows) < 2:
        return None
    a = torch.tensor([row == "1" for row in rows], dtype=torch.float64)
    b = torch.tensor([row == "1" for row in reference_rows], dtype=torch.float64)
    if not b.any():
        return None
    ratio = a.mean() / b.mean()
    standard_error = (a - ratio * b).std() / (len(rows) ** 0.5 * b.mean())
    return 1.96 * float(standard_error)


def train_row(
    row: RetrievalRow,
    candidate: Candidate,
    train: LabelledRows,
    test: LabelledRows,
    side: SideData,
    config: RetrievalConfig,
) -> None:
    """Train ``candidate``'s layer under the xmc encoder; fill ``row`` with its curve."""
    from bigvocab.train import TrainConfig, Trainer

    propensities = jain_propensities(side.counts, len(train))
    torch.manual_seed(config.seed)
    # in-batch candidates draw nothing: the batch's own labels are its k
    drawn = None if candidate.options.get("candidates") == "in_batch" else config.num_samples
    layer, row.options = build_layer(candidate, config.hidden, train.num_labels, side, num_samples=drawn)
    model = XMCModel(train.num_labels, layer, num_features=train.num_features, embedding_dim=config.hidden)
    trainer = Trainer(
        model,
        train,
        None,
        TrainConfig(
            epochs=1_000_000,
            batch_size=config.batch_size,
            optimizer=config.optimizer,
            lr=config.lr,
            lr_schedule="none",
            seed=config.seed,
            progress=False,
        ),
    )

    def rank(rows: LabelledRows) -> tuple[Tensor, Tensor]:
        return ranked_predictions(model, rows, TOP, config.batch_size)

    def run_to(step: int) -> float:
        trainer.config = dataclasses.replace(trainer.config, max_steps=step)
        start = time.perf_counter()
        trainer.fit()
        return time.perf_counter() - start

    budget = config.budget_seconds
    if candidate.is_reference and config.reference_budget_seconds is not None:
        budget = config.reference_budget_seconds
    for step in sorted({max(1, round(fraction * config.steps)) for fraction in config.checkpoints}):
        row.train_seconds += run_to(step)
        start = time.perf_counter()
        metrics = evaluate_rows(rank, test, propensities)
        row.eval_seconds += time.perf_counter() - start
        row.curve.append({"steps": trainer.step, "train_seconds": row.train_seconds, **metrics})
        if row.train_seconds >= budget and trainer.step < config.steps:
            row.error = f"stopped at {trainer.step} of {config.steps} steps: past the {budget:.0f} s budget"
            break
    row.steps = trainer.step
    row.seconds_per_step = row.train_seconds / row.steps
    row.metrics = {name: row.curve[-1][name] for name in METRICS}


def pecos_row(train: LabelledRows, test: LabelledRows, propensities: Tensor, row: RetrievalRow) -> None:
    """PECOS XR-Linear on the same rows, one thread, trained as PECOS's documentation trains it:
    PIFA label embeddings (each label's normalised sum of its rows' sparse features), a
    hierarchical spherical k-means tree over them (``pecos.xmc.Indexer``'s defaults: 16 branches,
    leaves of at most 100 labels), then a linear ranker per node (its default solver, negatives
    from the tree). ``row.train_seconds`` counts all three."""
    xmc = importlib.import_module("pecos.xmc")
    xlinear = importlib.import_module("pecos.xmc.xlinear.model")
    features, targets = _pecos_features(train), _pecos_targets(train)
    start = time.perf_counter()
    embeddings = xmc.LabelEmbeddingFactory.create(targets, features, method="pifa", threads=1)
    tree = xmc.Indexer.gen(embeddings, indexer_type="hierarchicalkmeans", threads=1)
    model = xlinear.XLinearModel.train(features, targets, C=tree, threads=1)
    row.train_seconds = time.perf_counter() - start
    row.options = {"label_embedding": "pifa", "tree": "hierarchicalkmeans", "threads": 1}

    def rank(rows: LabelledRows) -> tuple[Tensor, Tensor]:
        predicted = model.predict(_pecos_features(rows), only_topk=TOP, threads=1).tocsr()
        ranked = torch.full((len(rows), TOP), -1, dtype=torch.long)
        for n in range(len(rows)):
            begin, end = predicted.indptr[n], predicted.indptr[n + 1]
            order = predicted.data[begin:end].argsort()[::-1]
            ids = torch.as_tensor(predicted.indices[begin:end][order].copy(), dtype=torch.long)
            ranked[n, : ids.numel()] = ids
        return ranked, rows.labels

    start = time.perf_counter()
    point = evaluate_rows(rank, test, propensities)
    row.metrics = {name: point[name] for name in METRICS}
    row.eval_seconds = time.perf_counter() - start
    row.curve = [{"steps": 0, "train_seconds": row.train_seconds, **point}]


def _pecos_features(rows: LabelledRows):
    """The rows' sparse features as the float32 CSR matrix (N, D) PECOS reads, each row's ids
    sorted and distinct."""
    sparse = importlib.import_module("scipy.sparse")
    matrix = sparse.csr_matrix(
        (rows.feature_values.numpy(), rows.feature_ids.numpy(), rows.feature_offsets.numpy()),
        shape=(len(rows), rows.num_features),
    ).astype("float32")
    matrix.sum_duplicates()
    return matrix


def _pecos_targets(rows: LabelledRows):
    """The rows' label sets as a float32 CSR matrix (N, L) of ones."""
    sparse = importlib.import_module("scipy.sparse")
    labels = rows.labels
    kept = labels >= 0
    owners = torch.arange(len(rows)).unsqueeze(1).expand_as(labels)[kept]
    return sparse.csr_matrix(
        (torch.ones(int(kept.sum())).numpy(), (owners.numpy(), labels[kept].numpy())),
        shape=(len(rows), rows.num_labels),
        dtype="float32",
    )


def pecos_installed() -> bool:
    try:
        importlib.import_module("pecos.xmc.xlinear.model")
    except ImportError:
        return False
    return True


def run_retrieval(
    config: RetrievalConfig, stream: TextIO | None = None, on_row: Callable[[dict], object] | None = None
) -> dict:
    """Every row at every item count; returns the results (config, machine, task optima, rows).
    ``on_row(results)`` is called after each row with the results so far (``wall_seconds`` to then)."""
    started = time.perf_counter()
    candidates = retrieval_candidates(config.rows)
    with_pecos = (config.rows is None or any(_matches(pattern, PECOS) for pattern in config.rows)) and pecos_installed()
    if not candidates and not with_pecos:
        known = ", ".join([c.label for c in retrieval_candidates(None)] + [PECOS])
        raise ConfigError(f"--outputs matches no retrieval row (they are: {known})")
    if config.jobs < 1:
        raise ConfigError(f"jobs must be at least 1, got {config.jobs}")
    results: dict[str, Any] = {
        "config": {key: str(value) if isinstance(value, Path) else value for key, value in asdict(config).items()},
        "machine": describe_machine(torch.device("cpu")),
        "tasks": {},
        "rows": [],
        "notes": [] if pecos_installed() else [PECOS_MISSING],
    }
    for items in config.item_counts:
        task, _, _ = task_rows(items, config)
        results["tasks"][str(items)] = {
            "groups": task.num_groups,
            "bayes": {f"P@{k}": task.bayes_precision_at_k(k) for k in (1, 5)},
        }
        _log(
            stream, f"{items:,} items, {task.num_groups:,} groups: Bayes-optimal P@1 {task.bayes_precision_at_k(1):.3f}"
        )
    plan = [(items, candidate) for items in config.item_counts for candidate in [*candidates, *[None] * with_pecos]]
    position = {(items, PECOS if c is None else c.label): index for index, (items, c) in enumerate(plan)}

    def finish(record: dict) -> None:
        results["rows"].append(record)
        results["rows"].sort(key=lambda r: position[r["items"], r["approach"]])
        results["wall_seconds"] = time.perf_counter() - started
        if on_row is not None:
            on_row(results)
        _log(stream, row_line(record))

    if config.jobs == 1:
        threads = torch.get_num_threads()
        torch.set_num_threads(config.threads)
        try:
            for items, candidate in plan:
                finish(trained_row(items, candidate, config))
        finally:
            torch.set_num_threads(threads)
    else:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            config.jobs, mp_context=spawn, initializer=torch.set_num_threads, initargs=(config.threads,)
        ) as pool:
            futures: list[Future] = [pool.submit(trained_row, items, candidate, config) for items, candidate in plan]
            for future in as_completed(futures):
                finish(future.result())
    results["wall_seconds"] = time.perf_counter() - started
    return results


_TASK_CACHE: dict[tuple, tuple[SyntheticXMC, LabelledRows, LabelledRows]] = {}


def task_rows(items: int, config: RetrievalConfig) -> tuple[SyntheticXMC, LabelledRows, LabelledRows]:
    """:func:`make_task`, made once per process for the last item count asked (every row of an
    item count trains on it)."""
    key = (items, config.group_size, config.train_rows, config.test_rows, config.seed)
    if key not in _TASK_CACHE:
        _TASK_CACHE.clear()
        _TASK_CACHE[key] = make_task(items, config)
    return _TASK_CACHE[key]


def trained_row(items: int, candidate: Candidate | None, config: RetrievalConfig) -> dict:
    """One row of the results, trained in the calling process: ``candidate``'s layer, or the
    PECOS peer when None. A failing row is a row that says why, never a gap."""
    _, train, test = task_rows(items, config)
    counts = train.label_counts()
    row = (
        RetrievalRow(items, PECOS, "pecos")
        if candidate is None
        else RetrievalRow(items, candidate.label, candidate.method)
    )
    try:
        if candidate is None:
            pecos_row(train, test, jain_propensities(counts, len(train)), row)
        else:
            side = SideData(counts.tolist(), [str(i) for i in range(items)], lambda: torch.empty(0), "none")
            train_row(row, candidate, train, test, side, config)
        row.status = "ok"
    except Exception as error:
        row.status, row.error = "error", f"{type(error).__name__}: {error}"
    return asdict(row)


def row_line(row: dict) -> str:
    if row["status"] != "ok":
        return f"  {row['approach']:<24} {row['status']}: {row['error']}"
    metrics = "  ".join(f"{name} {row['metrics'][name]:.3f}" for name in METRICS)
    per_step = f"{row['seconds_per_step'] * 1000:.1f} ms/step" if row["seconds_per_step"] else "-"
    return f"  {row['approach']:<24} {metrics}  train {row['train_seconds']:.1f} s ({per_step})"


def report_markdown(results: dict, command: str) -> str:
    """One table per item count: the metrics, training time and time per step, each against the
    reference layer's and the task's Bayes-optimal P@k."""
    config, machine = results["config"], results["machine"]
    reference = reference_output()
    lines = [
        "# Retrieval: quality against training time on the planted task",
        "",
        f"Command: `{command}` ({results['wall_seconds'] / 60:.0f} min).",
        f"Machine: {machine['cpu']}, {machine['usable_cores']} usable cores, torch {machine['torch']}, "
        f"{config['threads']} thread(s), {machine['date']}.",
        f"Task: SyntheticXMC, groups of {config['group_size']} labels, {config['train_rows']:,} training rows, "
        f"{config['test_rows']:,} held-out rows. Model: xmc bag, H = {config['hidden']}, batch {config['batch_size']}, "
        f"{config['optimizer']} lr {config['lr']}, {config['steps']} steps per row "
        f"({config['steps'] * config['batch_size'] / config['train_rows']:.1f} epochs; a row stops at the first "
        f"checkpoint past {config['budget_seconds']:.0f} s of training{_reference_budget(config, reference)}), "
        f"k = {config['num_samples']} samples where a layer draws them. Evaluation: exact top-{TOP}.",
        "",
    ]
    for items, task in results["tasks"].items():
        rows = [row for row in results["rows"] if str(row["items"]) == items]
        base = next((row for row in rows if row["approach"] == reference and row["status"] == "ok"), None)
        bayes = task["bayes"]
        lines += [
            f"## {int(items):,} items (Bayes-optimal P@1 {bayes['P@1']:.3f}, P@5 {bayes['P@5']:.3f})",
            "",
            "| approach | "
            + " | ".join(METRICS)
            + f" | P@1 / {reference}'s | steps | train s | ms/step | step time / {reference}'s | note |",
            "|---" * (len(METRICS) + 7) + "|",
        ]
        for row in rows:
            if row["status"] != "ok":
                lines.append(f"| {row['approach']} |" + " |" * (len(METRICS) + 5) + f" {row['error']} |")
                continue
            metrics = " | ".join(f"{row['metrics'][name]:.3f}" for name in METRICS)
            ratio = _ratio_at_reference_steps(row, base)
            per_step = row["seconds_per_step"]
            step_ratio = f"{per_step / base['seconds_per_step']:.3f}" if base and per_step else "-"
            shown = f"{per_step * 1000:.1f}" if per_step else "-"
            lines.append(
                f"| {row['approach']} | {metrics} | {ratio} | {row['steps']} | {row['train_seconds']:.1f} | {shown} | "
                f"{step_ratio} | {row['error']} |"
            )
        lines += ["", *_checkpoint_table(rows, base, reference), ""]
    lines += [f"Note: {note}" for note in results["notes"]]
    return "\n".join(lines) + "\n"


def _reference_budget(config: dict, reference: str) -> str:
    budget = config.get("reference_budget_seconds")
    return "" if budget is None else f", {reference} past {budget:.0f} s"


def _checkpoint_table(rows: list[dict], base: dict | None, reference: str) -> list[str]:
    """P@1 of every trained row at each checkpoint, with its ratio to the reference's P@1 at the
    same steps (the same examples seen) where the reference reached them."""
    trained = [row for row in rows if row["status"] == "ok" and row["method"] != "pecos"]
    steps = sorted({int(point["steps"]) for row in trained for point in row["curve"]})
    if not steps:
        return []
    reference_points = {point["steps"]: point for point in base["curve"]} if base else {}
    lines = [
        f"P@1 at each checkpoint (steps; in brackets over {reference}'s P@1 after the same steps, ± the "
        "95% interval of that ratio, paired over the same held-out rows):",
        "",
        "| approach | " + " | ".join(str(step) for step in steps) + " |",
        "|---" * (len(steps) + 1) + "|",
    ]
    for row in trained:
        points = {point["steps"]: point for point in row["curve"]}
        cells = []
        for step in steps:
            point, reference_point = points.get(step), reference_points.get(step)
            if point is None:
                cells.append("")
            elif reference_point and reference_point["P@1"] and row is not base:
                cells.append(f"{point['P@1']:.3f} ({_ratio_cell(point, reference_point)})")
            else:
                cells.append(f"{point['P@1']:.3f}")
        lines.append(f"| {row['approach']} | " + " | ".join(cells) + " |")
    return lines


def _ratio_cell(point: dict, reference_point: dict) -> str:
    """``"ratio ± half-width"`` of two checkpoints' P@1, the interval where both kept their rows."""
    ratio = f"{point['P@1'] / reference_point['P@1']:.3f}"
    if P1_ROWS not in point or P1_ROWS not in reference_point:
        return ratio
    half_width = paired_ratio_interval(point[P1_ROWS], reference_point[P1_ROWS])
    return ratio if half_width is None else f"{ratio} ± {half_width:.3f}"


def _ratio_at_reference_steps(row: dict, base: dict | None) -> str:
    """P@1 of ``row`` at the reference's last checkpoint over the reference's P@1 there,
    ``"ratio ± half-width (at N steps)"`` (:func:`_ratio_cell`); "-" when either lacks that point."""
    if base is None or not base["metrics"]["P@1"]:
        return "-"
    steps = base["steps"]
    point = next((p for p in row["curve"] if p["steps"] == steps), None)
    if point is None:
        return "-"
    return f"{_ratio_cell(point, base['curve'][-1])} (at {steps})"


def write_plot(results: dict, path: Path) -> Path | None:
    """P@1 against training seconds, one panel per item count, log time; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    tasks = list(results["tasks"])
    figure, panels = plt.subplots(1, len(tasks), figsize=(6.5 * len(tasks), 5), squeeze=False)
    for axes, items in zip(panels[0], tasks):
        for index, row in enumerate(r for r in results["rows"] if str(r["items"]) == items and r["status"] == "ok"):
            times = [point["train_seconds"] for point in row["curve"]]
            values = [point["P@1"] for point in row["curve"]]
            style = {"color": plt.cm.tab20(index % 20), "marker": "osD^v<>"[index % 7]}
            axes.plot(times, values, label=row["approach"], **style)
        axes.axhline(results["tasks"][items]["bayes"]["P@1"], color="black", linestyle=":", label="Bayes-optimal")
        axes.set_xscale("log")
        axes.set_xlabel("training seconds")
        axes.set_ylabel("P@1 (held-out rows)")
        axes.set_title(f"{int(items):,} items")
    panels[0][-1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _log(stream: TextIO | None, line: str) -> None:
    if stream is not None:
        print(line, file=stream, flush=True)


def config_from_args(args) -> RetrievalConfig:
    """The bench flags that apply: ``--vocab-sizes`` (item counts), ``--hidden``, ``--batch``,
    ``--seed``, ``--outputs`` (row labels or patterns), ``--out``, ``--reference-budget``,
    ``--jobs``, ``--threads``. Another ``--batch`` keeps the examples each row sees, and so the
    epochs: the steps scale by the default batch over it."""
    config = RetrievalConfig(out=Path(getattr(args, "out", None) or "bench-out/retrieval"))
    if getattr(args, "vocab_sizes", None) is not None:
        config.item_counts = list(parse_sizes(args.vocab_sizes))
    if getattr(args, "batch", None) is not None:
        config.steps = max(1, round(config.steps * config.batch_size / args.batch))
    for name, key in (
        ("hidden", "hidden"),
        ("batch", "batch_size"),
        ("seed", "seed"),
        ("reference_budget", "reference_budget_seconds"),
        ("jobs", "jobs"),
        ("threads", "threads"),
    ):
        value = getattr(args, name, None)
        if value is not None:
            setattr(config, key, value)
    if getattr(args, "outputs", None):
        config.rows = [pattern for pattern in args.outputs.split(",") if pattern]
    return config


def main(args) -> int:
    """``bigvocab bench --retrieval``: run, print the table, write report.md, results.json and the
    plot (rewritten after every row)."""
    config = config_from_args(args)
    config.out.mkdir(parents=True, exist_ok=True)
    flags = sys.argv[sys.argv.index("--retrieval") + 1 :] if "--retrieval" in sys.argv else []
    command = " ".join(["bigvocab bench --retrieval", *flags])

    def write(results: dict) -> str:
        # after every row, so a run stopped early keeps the report of the rows it finished
        markdown = report_markdown(results, command)
        (config.out / "report.md").write_text(markdown)
        (config.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        write_plot(results, config.out / "quality_vs_time.png")
        return markdown

    results = run_retrieval(config, stream=sys.stdout, on_row=write)
    markdown = write(results)
    plot = config.out / "quality_vs_time.png"
    print(markdown)
    print(
        f"wrote {config.out / 'report.md'}, {config.out / 'results.json'}" + (f" and {plot}" if plot.exists() else "")
    )
    return 0
