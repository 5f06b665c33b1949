"""The PyTorch peers behind the OutputLayer interface, the required-flops formulas against a
brute-force count, and the matmul-rate probe."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.bench.flops import TRAIN_FLOPS, counted_flops, required_train_flops
from bigvocab.bench.matmul_rate import measure_matmul_rate
from bigvocab.bench.peers import LinearCrossEntropyPeer, TorchAdaptivePeer

V, H, N = 50, 16, 9


def zipf_counts(num_classes: int) -> list[int]:
    return [int(10_000 / (rank + 1)) + 1 for rank in range(num_classes)]


@pytest.mark.parametrize("peer", [TorchAdaptivePeer(H, V, counts=zipf_counts(V)), LinearCrossEntropyPeer(H, V)])
def test_peers_are_exact_normalised_output_layers(peer):
    peer = peer.double()
    hidden = torch.randn(N, H, dtype=torch.float64)
    target = torch.randint(0, V, (N,))
    log_p = peer.log_softmax(hidden)
    torch.testing.assert_close(log_p.logsumexp(1), torch.zeros(N, dtype=torch.float64))
    gathered = log_p.gather(1, target[:, None]).squeeze(1)
    torch.testing.assert_close(peer.loss(hidden, target, reduction="none"), -gathered)
    torch.testing.assert_close(peer.log_prob(hidden, target), gathered)
    values, ids = peer.topk(hidden, 3)
    torch.testing.assert_close(values, log_p.topk(3, dim=1).values)


@pytest.mark.skipif("adaptive" not in bigvocab.list_outputs(), reason="adaptive not registered")
def test_torch_adaptive_is_the_same_model_as_adaptive():
    counts = zipf_counts(V)
    ours = bigvocab.create_output("adaptive", H, V, counts=counts)
    peer = TorchAdaptivePeer(H, V, counts=counts)
    assert peer.cutoffs == ours.cutoffs
    assert sum(p.numel() for p in peer.parameters()) == sum(p.numel() for p in ours.parameters())
    target = torch.randint(0, V, (N,))
    assert required_train_flops("adaptive", ours, target) == required_train_flops("torch-adaptive", peer, target)


def test_dense_formula_matches_the_counted_matmul_flops():
    peer = LinearCrossEntropyPeer(H, V)
    hidden = torch.randn(N, H, requires_grad=True)
    target = torch.randint(0, V, (N,))
    counted = counted_flops(lambda: peer.loss(hidden, target).backward())
    required, source = required_train_flops("torch-linear", peer, target)
    assert source == "formula"
    assert required == counted == 6 * N * H * V


def test_torch_adaptive_formula_counts_head_and_visited_clusters():
    peer = TorchAdaptivePeer(H, V, counts=zipf_counts(V))
    target = torch.randint(0, V, (N,))
    hidden = torch.randn(N, H, requires_grad=True)
    counted = counted_flops(lambda: peer.loss(hidden, target).backward())
    required, _ = required_train_flops("torch-adaptive", peer, target)
    # torch runs each visited cluster only on the rows whose target is in it: the same arithmetic.
    assert required == counted


@pytest.mark.skipif("hsm" not in bigvocab.list_outputs(), reason="hsm not registered")
@pytest.mark.parametrize("tree", ["balanced", "huffman", "class"])
def test_tree_formula_is_the_brute_force_path_cost(tree):
    counts = zipf_counts(V)
    layer = bigvocab.create_output("hsm", H, V, counts=counts, tree=tree)
    target = torch.randint(0, V, (N,))
    brute = 0
    for leaf in target.tolist():
        brute += sum(int(layer.tree.arity[node]) - 1 for node in layer.tree.path(leaf))
    required, source = required_train_flops("hsm", layer, target)
    assert source == "formula"
    assert required == 6 * H * brute


@pytest.mark.skipif("dsoftmax" not in bigvocab.list_outputs(), reason="dsoftmax not registered")
def test_dsoftmax_formula_is_the_block_diagonal_cost():
    layer = bigvocab.create_output("dsoftmax", H, V, counts=zipf_counts(V))
    target = torch.randint(0, V, (N,))
    # Every weight entry of a band is one multiply-add with one hidden unit per row.
    per_row = sum(w.numel() for w in layer.weights)
    assert required_train_flops("dsoftmax", layer, target) == (6.0 * N * per_row, "formula")


@pytest.mark.parametrize("name", [n for n in ("sampled", "nce", "neg") if n in bigvocab.list_outputs()])
def test_sampling_formula_is_k_plus_one_rows(name):
    layer = bigvocab.create_output(name, H, V, counts=zipf_counts(V), num_samples=7)
    target = torch.randint(0, V, (N,))
    assert required_train_flops(name, layer, target) == (6.0 * N * H * 8, "formula")


def test_unknown_method_has_no_formula():
    assert (
        required_train_flops("no-such-method", LinearCrossEntropyPeer(H, V), torch.zeros(2, dtype=torch.long))[0]
        is None
    )
    assert "full" in TRAIN_FLOPS


def test_matmul_rate_reports_each_shape_and_the_best():
    rate = measure_matmul_rate([(16, 8, 32), (8, 8, 8)], torch.device("cpu"), repeats=1, min_time=0.001)
    assert [(s["m"], s["k"], s["n"]) for s in rate["shapes"]] == [(16, 8, 32), (8, 8, 8)]
    assert rate["best_gflops"] == max(s["gflops"] for s in rate["shapes"]) > 0
