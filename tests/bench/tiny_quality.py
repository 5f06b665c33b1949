"""The smallest quality run the bench tests share: an NNLM with 4-dimensional embeddings and 8
hidden units on synthetic corpora of 100 and 200 words, trained half a second per layer."""

from __future__ import annotations

from typing import Any

from bigvocab.bench import QualityConfig


def tiny_quality(**overrides: Any) -> QualityConfig:
    """A tiny :class:`QualityConfig`; ``overrides`` set the split size, batch size or time budget."""
    settings: dict[str, Any] = dict(
        small_vocab=100,
        large_vocab=200,
        num_classes=10,
        train_tokens=25_000,
        test_tokens=None,
        budget_seconds=0.5,
        batch_size=128,
        seed_repeats=0,
        all_rows=True,  # every row, so that every row is seen to train and evaluate
        model_kwargs={"embedding_dim": 4, "hidden_dim": 8, "context": 2},
    )
    settings.update(overrides)
    return QualityConfig(**settings)
