"""The ``bench`` command-line options: presets, overrides and clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bigvocab.bench import BenchConfig, add_bench_arguments, config_from_args
from bigvocab.bench.harness.config import parse_size, parse_sizes
from bigvocab.errors import ConfigError


def parse(*argv: str) -> BenchConfig:
    parser = argparse.ArgumentParser()
    add_bench_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def test_quick_is_the_default_preset():
    config = parse()
    assert config == BenchConfig.quick(out=Path("bench-out"))
    assert config.mode == "quick" and config.outputs is None


def test_full_preset_and_overrides():
    argv = "--full --outputs hsm*,sampled --vocab-sizes 1M,10k --hidden 64 --batch 32 --repeats 2 --num-samples 16"
    argv += " --device cpu --seed 7 --out somewhere --skip-quality --no-progress"
    config = parse(*argv.split())
    assert config.mode == "full"
    assert config.outputs == ["hsm*", "sampled"]
    assert parse("--outputs", "hsm*, sampled").outputs == ["hsm*", "sampled"]
    assert config.vocab_sizes == (10_000, 1_000_000)
    assert (config.hidden, config.batch, config.repeats, config.num_samples, config.seed) == (64, 32, 2, 16, 7)
    assert config.out == Path("somewhere") and config.skip_quality and not config.skip_speed
    assert not config.progress
    assert config.quality == BenchConfig.full().quality


def test_the_quality_language_takes_the_presets_zipf_exponent():
    """The full preset's quality runs use the steeper language its sizing measured (zipf 1.5,
    docs/design/bench-quality-preset.md); the corpus the bench loads must be that language."""
    from bigvocab.bench.suites.quality import quality_tasks
    from bigvocab.data.corpora import load_corpus

    full, quick = BenchConfig.full(), BenchConfig.quick()
    assert (full.quality.zipf, full.quality.optimizer, full.quality.lr) == (1.5, "adagrad", 0.1)
    assert (quick.quality.zipf, quick.quality.optimizer, quick.quality.lr) == (1.5, "adagrad", 0.1)
    task = quality_tasks(full)[0]
    spec = task.spec.replace(f"tokens={full.quality.train_tokens}", "tokens=3000")
    steep = load_corpus(spec, progress=False)
    flat = load_corpus(spec.replace("zipf=1.5", "zipf=1.0"), progress=False)
    assert steep.floor_perplexity < flat.floor_perplexity


def test_quick_and_full_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        parse("--quick", "--full")


@pytest.mark.parametrize(
    "text, value", [("10000", 10_000), ("10k", 10_000), ("1M", 1_000_000), ("2.5k", 2_500), ("1_000", 1000)]
)
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["ten", "1.5", "1", "", "k"])
def test_bad_sizes_are_named(text):
    with pytest.raises(ConfigError, match="size"):
        parse_sizes(text)


def test_empty_pattern_list_is_refused():
    with pytest.raises(ConfigError, match="--outputs"):
        parse("--outputs", " , ")
