"""word2vec training as word2vec.c and gensim do it: the defaults of the CLI and of the output
layers, one SGD step of rate alpha against a hand-written word2vec update (skip-gram and CBOW,
negative sampling and hierarchical softmax), and a few epochs on a corpus whose co-occurrences
are known."""

from __future__ import annotations

import json
import math

import pytest
import torch

import bigvocab
from bigvocab.checkpoint import load_checkpoint
from bigvocab.cli import _train_config, apply_model_defaults, build_parser, main
from bigvocab.errors import ConfigError
from bigvocab.models import build_model
from bigvocab.samplers.base import Sampler
from bigvocab.train import TrainConfig, build_optimizers

ALPHA = 0.025
V, H = 30, 6


class FixedNegatives(Sampler):
    """Hands out the given ids as its draws, so that a test knows every negative in advance."""

    def __init__(self, num_classes: int, ids: torch.Tensor) -> None:
        super().__init__(num_classes)
        self.ids = ids

    def sample(self, num_samples, *, context=None, generator=None):
        assert num_samples == self.ids.numel()
        return self.ids.clone()

    def log_q(self, ids, *, context=None):
        return torch.full(ids.shape, -math.log(self.num_classes))


def zipf_counts(size: int) -> list[int]:
    return [1000 // (i + 1) + 1 for i in range(size)]


# ------------------------------------------------------------------------------ defaults
def parsed(*argv: str):
    args = build_parser().parse_args(["train", "--out", "unused", *argv])
    return args, apply_model_defaults(args)


@pytest.mark.parametrize("model", ["skipgram", "cbow"])
def test_cli_fills_in_gensims_defaults(model):
    args, output_defaults = parsed("--model", model, "--corpus", "text:x")
    config = _train_config(args, needs_output=True)
    assert (config.lr, config.lr_schedule, config.min_lr, config.optimizer) == (0.025, "linear", 1e-4, "sgd")
    assert config.epochs == 5 and config.patience is None
    assert args.output == "neg" and args.min_count == 5 and output_defaults == {}


def test_cli_keeps_what_the_user_gave_and_leaves_other_models_alone():
    args, output_defaults = parsed(
        "--model", "cbow", "--output", "hsm", "--lr", "0.05", "--epochs", "2", "--min-count", "3", "--corpus", "text:x"
    )
    config = _train_config(args, needs_output=True)
    assert (config.lr, config.epochs, args.min_count, config.lr_schedule) == (0.05, 2, 3, "linear")
    assert output_defaults == {"bias": False, "zero_init": True}
    # The synthetic language refuses a min_count: none is filled in for it.
    args, _ = parsed("--model", "skipgram")
    assert args.min_count is None and args.lr == 0.025
    args = build_parser().parse_args(["train", "--out", "unused", "--model", "nnlm"])
    assert _train_config(args, needs_output=True).lr == TrainConfig().lr


def test_cli_run_records_word2vec_settings(tmp_path):
    """End to end: cbow + hsm with the defaults, and skipgram + neg with gensim's option names."""
    path = tmp_path / "corpus.txt"
    generator = torch.Generator().manual_seed(0)
    lines = torch.randint(0, 20, (200, 8), generator=generator).tolist()
    path.write_text("".join(" ".join(f"w{i}" for i in line) + "\n" for line in lines))
    common = ["--corpus", f"text:{path}", "--vector-size", "8", "--no-progress"]
    assert main(["train", "--model", "cbow", "--output", "hsm", *common, "--out", str(tmp_path / "cb")]) == 0
    checkpoint = load_checkpoint(tmp_path / "cb" / "last.pt")
    assert checkpoint["meta"]["output_kwargs"] == {"bias": False, "zero_init": True}
    assert checkpoint["meta"]["corpus_options"]["min_count"] == 5
    assert checkpoint["config"]["epochs"] == 5 and checkpoint["config"]["lr"] == 0.025
    assert "model.output.bias" not in checkpoint["model"]
    assert (
        main(
            [
                "train",
                "--model",
                "skipgram",
                "--negative",
                "3",
                "--ns-exponent",
                "0.5",
                *common,
                "--epochs",
                "1",
                "--skip-perplexity",
                "--out",
                str(tmp_path / "sg"),
            ]
        )
        == 0
    )
    model, _ = bigvocab.checkpoint.build_from_meta(load_checkpoint(tmp_path / "sg" / "last.pt")["meta"])
    assert model.output.num_samples == 3 and model.output.sampler.power == 0.5
    assert not (tmp_path / "sg" / "best.pt").exists()  # --skip-perplexity: no validation
    assert json.loads((tmp_path / "sg" / "summary.json").read_text())["test_ppl"] is None


def test_output_layers_start_like_word2vec():
    neg = bigvocab.create_output("neg", H, V, counts=zipf_counts(V))
    assert neg.bias is None and not neg.weight.any()
    assert neg.sampler.power == 0.75
    assert bigvocab.create_output("neg", H, V, counts=zipf_counts(V), ns_exponent=1.0).sampler.power == 1.0
    assert bigvocab.create_output("neg", H, V, counts=zipf_counts(V), zero_init=False).weight.any()
    hsm = bigvocab.create_output("hsm", H, V, counts=zipf_counts(V), bias=False, zero_init=True)
    assert not hsm.weight.any()
    assert bigvocab.create_output("hsm", H, V, counts=zipf_counts(V)).weight.any()  # an LM layer by default
    with pytest.raises(ConfigError, match="give that sampler its own power"):
        bigvocab.create_output("neg", H, V, counts=zipf_counts(V), sampler="uniform", ns_exponent=0.5)
    with pytest.raises(ConfigError, match="zero_init must be True or False"):
        bigvocab.create_output("hsm", H, V, counts=zipf_counts(V), zero_init="yes")


# ------------------------------------------------------------------------------ one step
def word2vec_update(hidden, outputs, labels, syn1):
    """word2vec.c's update for one example, as deltas: each output row u (``outputs``) with its
    label gets g = alpha (label - σ(h·u)) and moves by g h; the hidden vector's error is Σ g u."""
    error = torch.zeros_like(hidden)
    delta = torch.zeros_like(syn1)
    for row, label in zip(outputs, labels):
        g = ALPHA * (label - torch.sigmoid(hidden @ syn1[row]))
        error += g * syn1[row]
        delta[row] += g * hidden
    return error, delta


def hsm_path(layer, word: int) -> tuple[list[int], list[float]]:
    """The node rows on ``word``'s path and the branch taken at each (1: the child scored σ(h·u))."""
    rows, labels = [], []
    node, position = int(layer.tree_leaf_parent[word]), int(layer.tree_leaf_position[word])
    while True:
        rows.append(int(layer._param_base[node]))
        labels.append(float(position))
        if node == 0:
            return rows, labels
        node, position = int(layer.tree_node_parent[node]), int(layer.tree_node_position[node])


def build(name: str, output: str, negatives=None, **model_options):
    torch.manual_seed(0)
    output_kwargs = {"bias": False, "zero_init": True} if output == "hsm" else {}
    if negatives is not None:
        output_kwargs = {"num_samples": negatives.shape[1], "sampler": FixedNegatives(V, negatives.reshape(-1))}
    model = build_model(
        name,
        V,
        output,
        counts=zipf_counts(V),
        output_kwargs=output_kwargs,
        model_kwargs={"vector_size": H, "window": 2, "sample": 0, **model_options},
    )
    with torch.no_grad():  # a trained state: zero output vectors would leave the input side still
        model.output.weight.normal_(0, 0.5)
    return model


def sgd_step(model, batch) -> torch.Tensor:
    """One step of the trainer's optimiser (sgd, lr = alpha); returns the loss value."""
    optimizers, _ = build_optimizers(model, TrainConfig(optimizer="sgd", lr=ALPHA))
    loss = model.loss(batch)
    loss.backward()
    for optimizer in optimizers:
        optimizer.step()
    return loss.detach()


#: Three examples whose words are all different, so word2vec's one-after-the-other updates and
#: the batch's simultaneous ones must agree exactly (paths of hsm share nodes; there the
#: reference sums each example's update computed from the same parameters, as documented).
CENTRES = torch.tensor([0, 1, 2])
TARGETS = torch.tensor([3, 4, 5])
NEGATIVES = torch.tensor([[6, 7], [8, 9], [10, 11]])
CONTEXTS = torch.tensor([[12, 13, 14, 0], [15, 16, 17, 18], [19, 20, 0, 0]])
MASK = torch.tensor([[True, True, True, False], [True] * 4, [True, True, False, False]])


def output_rows(model, target: int, negatives) -> tuple[list[int], list[float]]:
    if negatives is None:
        return hsm_path(model.output, target)
    return [target, *negatives.tolist()], [1.0] + [0.0] * negatives.numel()


@pytest.mark.parametrize("output", ["neg", "hsm"])
@pytest.mark.parametrize("word2vec_updates", [True, False])
def test_skipgram_step_is_word2vecs_update_per_pair(output, word2vec_updates):
    negatives = NEGATIVES if output == "neg" else None
    model = build("skipgram", output, negatives, word2vec_updates=word2vec_updates)
    syn0, syn1 = model.embedding.weight.detach().clone(), model.output.weight.detach().clone()
    batch = {"centre": CENTRES, "target": TARGETS}
    with torch.no_grad():
        per_pair = model.output.loss(model.features(batch), TARGETS, reduction="none")
    value = sgd_step(model, batch)
    want0, want1 = syn0.clone(), syn1.clone()
    for n in range(len(CENTRES)):
        rows, labels = output_rows(model, int(TARGETS[n]), None if negatives is None else negatives[n])
        error, delta = word2vec_update(syn0[CENTRES[n]], rows, labels, syn1)
        want0[CENTRES[n]] += error
        want1 += delta
    # word2vec's step is alpha per pair; the mean of a batch of N pairs would give alpha / N
    scale = 1.0 if word2vec_updates else 1.0 / len(CENTRES)
    torch.testing.assert_close(model.embedding.weight.detach(), syn0 + scale * (want0 - syn0), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(model.output.weight.detach(), syn1 + scale * (want1 - syn1), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(value, per_pair.mean())  # the value the trainer logs is the mean


@pytest.mark.parametrize("output", ["neg", "hsm"])
@pytest.mark.parametrize("cbow_mean", [True, False])
def test_cbow_step_is_word2vecs_update_per_window(output, cbow_mean):
    """word2vec.c and gensim: h is the mean (or sum) of the context vectors; each context vector
    then moves by the whole error of h under the mean, by error / count under the sum."""
    negatives = NEGATIVES if output == "neg" else None
    model = build("cbow", output, negatives, cbow_mean=cbow_mean)
    syn0, syn1 = model.embedding.weight.detach().clone(), model.output.weight.detach().clone()
    sgd_step(model, {"context": CONTEXTS, "mask": MASK, "target": TARGETS})
    want0, want1 = syn0.clone(), syn1.clone()
    for n in range(len(TARGETS)):
        context = CONTEXTS[n][MASK[n]]
        total = syn0[context].sum(0)
        hidden = total / len(context) if cbow_mean else total
        rows, labels = output_rows(model, int(TARGETS[n]), None if negatives is None else negatives[n])
        error, delta = word2vec_update(hidden, rows, labels, syn1)
        want0[context] += error if cbow_mean else error / len(context)
        want1 += delta
    torch.testing.assert_close(model.embedding.weight.detach(), want0, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(model.output.weight.detach(), want1, atol=1e-6, rtol=1e-5)


# ------------------------------------------------------------------------------ a few epochs
GROUPS, GROUP_SIZE = 4, 5


def grouped_stream(seed: int) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """Runs of 8 words, each run drawn from one of 4 groups of 5 words: words co-occur within
    their group (and across a run's boundary only). Returns the ids relabelled by descending
    frequency, the counts, and each id's group."""
    generator = torch.Generator().manual_seed(seed)
    runs = 150
    group = torch.randint(0, GROUPS, (runs, 1), generator=generator)
    words = (group * GROUP_SIZE + torch.randint(0, GROUP_SIZE, (runs, 8), generator=generator)).reshape(-1)
    counts = torch.bincount(words, minlength=GROUPS * GROUP_SIZE)
    order = torch.argsort(counts, descending=True, stable=True)
    relabel = torch.empty_like(order)
    relabel[order] = torch.arange(order.numel())
    return relabel[words], counts[order].tolist(), order // GROUP_SIZE


@pytest.mark.parametrize("output", ["neg", "hsm"])
@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_a_few_epochs_put_co_occurring_words_together(name, output):
    """After 4 epochs at gensim's alpha, every word's mean cosine to the words of its group must
    exceed its largest cosine to any word of another group. Measured when this test was written
    (seeds 0-2 of stream, init and batches): untrained, that margin is negative for 19 or 20 of
    the 20 words (smallest -0.63 to -0.86); trained, its smallest value over the words is 0.39 to
    0.88 across the four combinations, far from the threshold 0. With the gradient of the mean
    loss (alpha / 64 per example) the same 4 epochs fail it."""
    ids, counts, group = grouped_stream(0)
    torch.manual_seed(0)
    output_kwargs = {"bias": False, "zero_init": True} if output == "hsm" else {}
    model = build_model(
        name,
        len(counts),
        output,
        counts=counts,
        output_kwargs=output_kwargs,
        model_kwargs={"vector_size": 16, "window": 2, "sample": 0},
    )
    optimizers, _ = build_optimizers(model, TrainConfig(optimizer="sgd", lr=ALPHA))
    generator = torch.Generator().manual_seed(0)
    for _ in range(4):
        for batch in model.batches(ids, 64, train=True, generator=generator):
            for optimizer in optimizers:
                optimizer.zero_grad()
            model.loss(batch).backward()
            for optimizer in optimizers:
                optimizer.step()
    unit = torch.nn.functional.normalize(model.word_vectors(), dim=1)
    cosine = unit @ unit.t()
    same = group[:, None] == group[None, :]
    others_in_group = same & ~torch.eye(len(counts), dtype=torch.bool)
    within = (cosine * others_in_group).sum(1) / others_in_group.sum(1)
    nearest_outsider = cosine.masked_fill(same, -2.0).max(1).values
    assert (within > nearest_outsider).all(), (within - nearest_outsider).min()
