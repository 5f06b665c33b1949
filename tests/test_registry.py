"""The registries: the names the design notes promise, helpful errors for unknown names and
keywords, and side inputs (counts, words, vectors) given only to the layers that declare them."""

from __future__ import annotations

import pytest
import torch

import bigvocab
import bigvocab.models
from bigvocab.outputs.factory import create_output, list_scorers, output_side_inputs
from bigvocab.registry import MODELS, OUTPUTS, TREES

#: The names of /work/shared/DESIGN.md ("Registered names").
OUTPUT_NAMES = {
    "full",
    "hsm",
    "dsoftmax",
    "cnn",
    "adaptive",
    "sampled",
    "ais",
    "target",
    "nce",
    "neg",
    "bce",
    "selfnorm",
    "infreq",
    "char",
}
SAMPLER_NAMES = {"uniform", "unigram", "log_uniform", "learned", "bigram"}
MODEL_NAMES = {"nnlm", "lstm", "skipgram", "cbow", "cw", "xmc"}
SCORER_NAMES = {"linear", "cnn"}
TREE_NAMES = {"huffman", "balanced", "random", "class", "clustered"}


def test_the_designed_names_are_registered():
    assert set(bigvocab.list_outputs()) == OUTPUT_NAMES
    assert set(bigvocab.list_samplers()) == SAMPLER_NAMES
    assert set(MODELS.names()) == MODEL_NAMES
    assert set(list_scorers()) == SCORER_NAMES
    assert set(TREES.names()) == TREE_NAMES


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: create_output("hsn", 4, 10), r"unknown output layer 'hsn'; did you mean 'hsm'"),
        (lambda: create_output("full", 4, 10, scorer="linaer"), r"unknown scorer 'linaer'; did you mean 'linear'"),
        (lambda: create_output("sampled", 4, 10, num_sample=3), r"not take 'num_sample'; did you mean 'num_samples'"),
        (lambda: create_output("full", 4, 10, tree="huffman"), r"output layer 'full' does not take 'tree'"),
        (lambda: create_output("nce", 4, 10, correction_dim=3), r"does not take 'correction_dim'"),
        (lambda: create_output("cnn", 4, 10, scorer="linear"), r"'cnn' does not take 'scorer'"),
        (lambda: bigvocab.create_sampler("unigram", 10, powr=0.5), r"did you mean 'power'"),
    ],
)
def test_unknown_names_and_keywords_are_named(call, match):
    with pytest.raises((bigvocab.ConfigError, bigvocab.UnknownNameError), match=match):
        call()


def test_scorer_options_are_keywords_of_every_objective():
    words = [f"w{i}" for i in range(10)]
    options = {"correction_dim": 3, "filters": ((1, 2),)}
    layer = create_output("nce", 4, 10, scorer="cnn", sampler="uniform", words=words, **options)
    assert layer.scorer.correction_dim == 3
    assert "correction_dim" in OUTPUTS.get("nce").accepted_options({"scorer": "cnn"})
    assert "correction_dim" not in OUTPUTS.get("nce").accepted_options({})


def test_side_inputs_reach_only_the_layers_that_declare_them():
    counts, words, vectors = list(range(20, 10, -1)), [f"w{i}" for i in range(10)], torch.randn(10, 3)
    for name in bigvocab.list_outputs():
        # Every layer takes all three; the ones it does not read are dropped.
        options = {"tree": "clustered"} if name == "hsm" else {}
        create_output(name, 4, 10, counts=counts, words=words, vectors=vectors, **options)
    assert output_side_inputs("full") == frozenset()
    assert output_side_inputs("full", scorer="cnn") == {"words"}
    assert output_side_inputs("cnn") == {"counts", "words"}
    assert "counts" in output_side_inputs("sampled")


def test_hsm_reads_vectors_only_for_a_tree_that_needs_them():
    """Side inputs follow the tree's own declaration, so nobody computes word vectors for a
    Huffman tree, and the CLI's --tree-vectors check names no layer."""
    from bigvocab.outputs.factory import output_side_inputs

    assert output_side_inputs("hsm") == {"counts"}
    assert output_side_inputs("hsm", tree="clustered") == {"vectors"}
    assert output_side_inputs("hsm", tree="balanced") == frozenset()
    assert output_side_inputs("hsm", tree="class") == {"counts"}
