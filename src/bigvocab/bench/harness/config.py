"""What a benchmark run measures: :class:`BenchConfig` and its ``quick`` / ``full`` presets.

The quick preset is sized so that speed *and* quality finish in under ten minutes on two quiet
CPU cores: a full-softmax step at V = 100k, H = 256, N = 128 takes about 0.4 s there and every
layer is paired with one such step per repetition, slow operations get fewer repetitions
(``op_budget_seconds``), and the quality runs train each layer in its first declared form for
12 s on one small language where the models learn rather than overfit in that time
(``docs/design/bench-quick-quality.md``). The full
preset adds V = 1M with N = 1024 (a full step there takes tens of seconds) and quality runs long
enough for ``full`` to come within 1.5x of the synthetic floor at V = 10k: hours on the same machine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bigvocab.errors import ConfigError


@dataclass
class QualityConfig:
    """One NNLM training run per layer per corpus, all for the same wall-clock time.

    Every layer trains the same model with the same optimiser on the same training split for
    ``budget_seconds`` (as many passes as fit), and its exact test and validation perplexities are
    measured at the ``checkpoints`` fractions of that time: curves, compared at equal time.
    """

    #: V of the "small vocabulary" synthetic language.
    small_vocab: int = 2_000
    #: V of the "large vocabulary" synthetic language (None: the small one only).
    large_vocab: int | None = None
    #: classes of the synthetic language (its bigram structure lives on classes).
    num_classes: int = 50
    #: exponent of the synthetic language's within-class Zipf law (``SyntheticLanguage``'s zipf).
    zipf: float = 1.5
    #: tokens of the synthetic training split (valid and test a tenth each).
    train_tokens: int = 200_000
    #: exact test (and validation) perplexity on the first this many tokens of each split (None:
    #: the whole split); both are computed at every checkpoint, so a large V makes them the cost
    #: that counts.
    test_tokens: int | None = 10_000
    #: tokens of the Brown training split used per layer (None: all 800k, i.e. one epoch).
    brown_train_tokens: int | None = 200_000
    #: training wall time of every layer (evaluation excluded).
    budget_seconds: float = 12.0
    #: fractions of the budget at which the exact perplexities are measured (the last is 1).
    checkpoints: tuple[float, ...] = (0.125, 0.25, 0.5, 1.0)
    #: intra-op threads while training (None: torch's setting). The NNLM's matrices are small, so
    #: extra threads buy little, and on a shared machine they mostly wait for each other.
    threads: int | None = 1
    batch_size: int = 256
    #: optimiser name and learning rate of ``bigvocab.train.TrainConfig``, the same for every layer
    #: (Adagrad keeps sparse steps for the sampled and tree layers' rows).
    optimizer: str = "adagrad"
    lr: float = 0.1
    #: keyword arguments of the ``nnlm`` model (``bigvocab.models.build_model``).
    model_kwargs: dict = field(default_factory=lambda: {"embedding_dim": 32, "hidden_dim": 64, "context": 3})
    #: train every row (each declared form of each layer, e.g. every hsm tree, and the PyTorch
    #: peers), or only the first declared form of each registered layer.
    all_rows: bool = False
    #: extra runs of the reference layer with seeds ``seed + 1 ...``: their spread is the noise
    #: below which the recommendation does not rank two layers.
    seed_repeats: int = 1


@dataclass
class BenchConfig:
    """Everything one ``bigvocab bench`` run does; build it with :meth:`quick` or :meth:`full`."""

    mode: str = "quick"
    #: fnmatch patterns over the output layers, the hsm tree variants and the peers; None = all.
    outputs: list[str] | None = None
    vocab_sizes: tuple[int, ...] = (10_000, 100_000)
    #: H, the hidden size fed to every output layer in the speed runs.
    hidden: int = 256
    #: N, the rows of a training step (and at most those of ``log_softmax`` and ``topk``).
    batch: int = 128
    #: paired repetitions per layer, operation and V ...
    repeats: int = 3
    #: ... unless that many pairs would last longer than this (seconds): then as many as fit, >= 1.
    op_budget_seconds: float = 4.0
    #: k for every layer that takes ``num_samples``; None leaves each its paper's default
    #: (sampled and target 1024, nce 25, neg 5, ais 64 -- capped at V - 1).
    num_samples: int | None = None
    #: cap on the N' x V floats of the test-time timings (``log_softmax``, ``topk``): beyond it
    #: they use N' < N rows.
    max_eval_elements: int = 1 << 22
    #: each timed call is repeated until it lasts at least this long (seconds).
    min_time: float = 0.02
    device: str = "cpu"
    seed: int = 0
    out: Path | None = Path("bench-out")
    brown: Path | None = None
    #: a ``load_corpus`` spec (``text:PATH`` ...) whose quality runs replace the synthetic language's.
    corpus: str | None = None
    skip_speed: bool = False
    skip_quality: bool = False
    measure_memory: bool = True
    plots: bool = True
    progress: bool = True
    #: the word2vec engine against gensim (:mod:`bigvocab.bench.suites.word2vec`, ``bench --word2vec``'s rows).
    word2vec: bool = False
    quality: QualityConfig = field(default_factory=QualityConfig)

    @classmethod
    def quick(cls, **overrides) -> BenchConfig:
        """Under ten minutes on two quiet CPU cores: V in {10k, 100k}, N = 128, three repetitions,
        quality runs of 12 s of training per layer (first declared forms, plus a second seed of the
        reference) on a V = 2k language with 200k training tokens."""
        return cls(mode="quick", **overrides)

    @classmethod
    def full(cls, **overrides) -> BenchConfig:
        """The long run, at the sizes of the literature's comparisons: V up to 1M, N = 1024 (a full
        step at V = 1M then takes tens of seconds), three repetitions of timings lasting at least
        0.2 s, test-time timings on up to 2**28 floats (N' = 268 rows at V = 1M), and quality
        runs of 360 s of training per layer on V = 10k and 100k (2M-token splits, perplexity on
        20k test tokens at 45, 90, 180 and 360 s), then the word2vec rows of ``bench --word2vec``.
        About six hours on two quiet CPU cores, most of it the quality runs.

        The quality runs' language (Zipf exponent 1.5 within classes) and optimiser (Adagrad at
        0.1) are those under which ``full`` came within 1.5x of the floor at V = 10k in the steps
        360 s buy on two CPU cores (1.46-1.51x over three seeds at 5,490 steps of 256, against
        3.57x for zipf 1.0 with Adam at the 120 s of before: ``docs/design/bench-quality-preset.md``)."""
        quality = QualityConfig(
            small_vocab=10_000,
            large_vocab=100_000,
            zipf=1.5,
            train_tokens=2_000_000,
            test_tokens=20_000,
            brown_train_tokens=None,
            budget_seconds=360.0,
            threads=None,
            batch_size=256,
            optimizer="adagrad",
            lr=0.1,
            model_kwargs={"embedding_dim": 32, "hidden_dim": 128, "context": 4},
            all_rows=True,
            seed_repeats=0,
        )
        settings: dict[str, Any] = dict(
            mode="full",
            vocab_sizes=(10_000, 100_000, 1_000_000),
            batch=1024,
            repeats=3,
            op_budget_seconds=60.0,
            # Steps of 10-40 ms vary by 2x from call to call on a shared machine: a timing
            # averages ten of them rather than trusting one.
            min_time=0.2,
            max_eval_elements=1 << 28,
            quality=quality,
            word2vec=True,
        )
        settings.update(overrides)
        return cls(**settings)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["out"] = str(self.out) if self.out is not None else None
        out["brown"] = str(self.brown) if self.brown is not None else None
        return out


def parse_size(text: str) -> int:
    """``"10000"``, ``"10k"``, ``"1M"`` -> int; anything else is a :class:`ConfigError`."""
    cleaned = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(cleaned[-1:], 1)
    digits = cleaned[:-1] if scale != 1 else cleaned
    try:
        value = float(digits) * scale
    except ValueError:
        raise ConfigError(f"cannot read {text!r} as a size (write e.g. 10000, 10k or 1M)") from None
    if value != int(value) or value < 2:
        raise ConfigError(f"a vocabulary size must be a whole number >= 2, got {text!r}")
    return int(value)


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"10000,100k,1M"`` -> (10000, 100000, 1000000), sorted, duplicates removed."""
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise ConfigError("--vocab-sizes needs at least one size, e.g. 10000,100000")
    return tuple(sorted({parse_size(part) for part in parts}))


def parse_patterns(text: str) -> list[str]:
    """``"hsm*, sampled"`` -> ["hsm*", "sampled"]."""
    patterns = [part.strip() for part in text.split(",") if part.strip()]
    if not patterns:
        raise ConfigError("--outputs needs at least one row name or fnmatch pattern (see 'bigvocab list')")
    return patterns
