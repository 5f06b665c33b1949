"""The PyTorch peers behind the OutputLayer interface, the layers' declared cost models (which
the bench reads as required flops) against brute-force counts, and the matmul-rate probe."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.bench.harness.peers import LinearCrossEntropyPeer, TorchAdaptivePeer
from bigvocab.bench.harness.rows import OperationTiming, SpeedRow
from bigvocab.bench.suites.roofline import (
    MAX_PROBE_TABLE_BYTES,
    add_roofline_fractions,
    counted_flops,
    measure_bandwidth,
    measure_matmul_rate,
    probe_table_rows,
    required_train_cost,
    roofline_seconds,
)
from bigvocab.registry import OUTPUTS, PEERS, build

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
    values, _ids = peer.topk(hidden, 3)
    torch.testing.assert_close(values, log_p.topk(3, dim=1).values)


def required_train_flops(layer, target) -> float:
    cost, source = required_train_cost(layer, target)
    assert source == "formula"
    return cost.flops


def test_torch_adaptive_is_the_same_model_as_adaptive():
    counts = zipf_counts(V)
    ours = bigvocab.create_output("adaptive", H, V, counts=counts)
    peer = TorchAdaptivePeer(H, V, counts=counts)
    assert peer.cutoffs == ours.cutoffs
    assert sum(p.numel() for p in peer.parameters()) == sum(p.numel() for p in ours.parameters())
    target = torch.randint(0, V, (N,))
    assert ours.train_cost(target) == peer.train_cost(target)
    assert ours.log_prob_cost(target) == peer.log_prob_cost(target)


def test_dense_formula_matches_the_counted_matmul_flops():
    peer = LinearCrossEntropyPeer(H, V)
    hidden = torch.randn(N, H, requires_grad=True)
    target = torch.randint(0, V, (N,))
    counted = counted_flops(lambda: peer.loss(hidden, target).backward())
    assert required_train_flops(peer, target) == counted == 6 * N * H * V


def test_torch_adaptive_formula_counts_head_and_visited_clusters():
    peer = TorchAdaptivePeer(H, V, counts=zipf_counts(V))
    target = torch.randint(0, V, (N,))
    hidden = torch.randn(N, H, requires_grad=True)
    counted = counted_flops(lambda: peer.loss(hidden, target).backward())
    required = required_train_flops(peer, target)
    # torch runs each visited cluster only on the rows whose target is in it: the same arithmetic.
    assert required == counted


@pytest.mark.parametrize("tree", ["balanced", "huffman", "class"])
def test_tree_formula_is_the_brute_force_path_cost(tree):
    counts = zipf_counts(V)
    layer = bigvocab.create_output("hsm", H, V, counts=counts, tree=tree)
    target = torch.randint(0, V, (N,))
    brute = 0
    for leaf in target.tolist():
        brute += sum(int(layer.tree.arity[node]) - 1 for node in layer.tree.path(leaf))
    assert required_train_flops(layer, target) == 6 * H * brute


def test_dsoftmax_formula_is_the_block_diagonal_cost():
    layer = bigvocab.create_output("dsoftmax", H, V, counts=zipf_counts(V))
    target = torch.randint(0, V, (N,))
    # Every weight entry of a band is one multiply-add with one hidden unit per row.
    per_row = sum(w.numel() for w in layer.weights)
    assert required_train_flops(layer, target) == 6.0 * N * per_row


@pytest.mark.parametrize("name", ["sampled", "nce", "neg", "ais"])
def test_sampling_formula_is_k_plus_one_rows(name):
    layer = bigvocab.create_output(name, H, V, counts=zipf_counts(V), num_samples=7)
    target = torch.randint(0, V, (N,))
    assert required_train_flops(layer, target) == 6.0 * N * H * 8


@pytest.mark.parametrize("shared", [False, True])
def test_ais_counts_the_blocks_its_last_step_drew(shared):
    """Before a step the first block (a lower bound); after one, the k draws of every block each
    example drew by the ESS rule, shared or not."""
    k = 7
    layer = bigvocab.create_output(
        "ais", H, V, counts=zipf_counts(V), num_samples=k, max_samples=4 * k, min_ess=k - 0.5, shared=shared
    )
    target = torch.randint(0, V, (N,))
    assert required_train_flops(layer, target) == 6.0 * N * H * (k + 1)
    _, first_block_rows = layer._train_scores(target)
    torch.manual_seed(0)
    layer.loss(3.0 * torch.randn(N, H), target)
    blocks = layer.last_examples_per_block
    assert len(blocks) > 1 and layer.last_draws_shared == shared
    assert blocks[0] == N
    assert required_train_flops(layer, target) == 6.0 * H * (N + sum(blocks) * k)
    _, rows = layer._train_scores(target)
    assert first_block_rows < rows <= V
    other_batch = torch.randint(0, V, (N + 1,))
    assert required_train_flops(layer, other_batch) == 6.0 * (N + 1) * H * (k + 1)


def test_dense_objectives_pay_the_whole_normaliser_and_infreq_a_fraction():
    target = torch.randint(0, V, (N,))
    for name in ("full", "selfnorm"):
        assert required_train_flops(bigvocab.create_output(name, H, V), target) == 6.0 * N * H * V
    infreq = bigvocab.create_output("infreq", H, V, gamma=0.25)
    chosen = round(0.25 * N)
    assert required_train_flops(infreq, target) == 6.0 * H * (N + chosen * V)
    tau = bigvocab.create_output("target", H, V, counts=zipf_counts(V), num_samples=7)
    assert required_train_flops(tau, target) == 6.0 * N * H * max(7, int(torch.unique(target).numel()))


def test_linear_bytes_count_each_touched_row_three_times():
    layer = bigvocab.create_output("sampled", H, V, num_samples=7, shared=False, bias=False)
    target = torch.randint(0, V, (N,))
    _, rows = layer._train_scores(target)
    assert N <= rows < N * 8
    # U distinct rows (targets and samples) of H floats, read forward and backward and their
    # gradient written, plus the hidden states read and their gradient written.
    assert layer.train_cost(target).bytes == pytest.approx(4 * (3 * rows * H + 2 * N * H))
    assert layer.log_prob_cost(target).bytes == 4 * (V * H + N * H)
    # The sampled rows are gathered; the hidden states, and all V rows of the exact pass, stream.
    assert layer.train_cost(target).gathered == pytest.approx(4 * 3 * rows * H)
    assert layer.log_prob_cost(target).gathered == 0


@pytest.mark.parametrize("tree", ["balanced", "huffman", "class"])
def test_tree_bytes_read_each_node_on_the_paths_once(tree):
    layer = bigvocab.create_output("hsm", H, V, counts=zipf_counts(V), tree=tree, bias=False)
    target = torch.randint(0, V, (N,))
    nodes = {node for leaf in target.tolist() for node in layer.tree.path(leaf)}
    vectors = sum(int(layer.tree.arity[node]) - 1 for node in nodes)
    assert layer.train_cost(target).gathered == 4 * 3 * vectors * H
    assert layer.log_prob_cost(target).bytes == 4 * (vectors * H + N * H)


@pytest.mark.parametrize(
    "name, options",
    [
        ("sampled", {}),
        ("sampled", {"shared": False}),
        ("nce", {}),
        ("neg", {"shared": True}),
        ("ais", {}),
        ("ais", {"shared": True}),
    ],
)
def test_sampling_layers_declare_the_expected_distinct_rows(name, options):
    """The declared rows are E|targets ∪ candidates|: against the mean of R = 4,000 real draws,
    within 4 standard errors. ``sampled``'s default draws k distinct ids, whose inclusion
    probabilities are approximated (``inclusion_probabilities``); 0.5% of the count is allowed for
    it (the gap measured with 20,000 draws was 0.1%)."""
    layer = bigvocab.create_output(name, H, V, counts=zipf_counts(V), num_samples=7, **options)
    generator = torch.Generator().manual_seed(3)
    target = torch.multinomial(
        torch.tensor(zipf_counts(V), dtype=torch.float64), N, replacement=True, generator=generator
    )
    _, declared = layer._train_scores(target)
    torch.manual_seed(4)
    repetitions = 4000
    counts = torch.tensor(
        [
            float(torch.cat([layer._draw(N, unique=layer.unique)[0].reshape(-1), target]).unique().numel())
            for _ in range(repetitions)
        ],
        dtype=torch.float64,
    )
    standard_error = float(counts.std()) / repetitions**0.5
    tolerance = 4 * standard_error + (0.005 * declared if layer.unique else 0.0)
    assert abs(declared - float(counts.mean())) < tolerance


def test_gathered_bytes_are_the_chosen_rows_only():
    target = torch.randint(0, V, (N,))
    assert bigvocab.create_output("full", H, V).train_cost(target).gathered == 0
    tree = bigvocab.create_output("hsm", H, V, counts=zipf_counts(V), bias=False).train_cost(target)
    hidden_bytes = 4 * 2 * N * H
    assert tree.gathered == tree.bytes - hidden_bytes > 0


def _layer(registry, name: str):
    words = [f"w{i}" for i in range(V)]
    vectors = torch.randn(V, 4)
    side = {"counts": zipf_counts(V), "words": words, "vectors": vectors}
    return build(registry, name, (H, V), side, {})


@pytest.mark.parametrize(
    "registry, name", [(OUTPUTS, n) for n in bigvocab.list_outputs()] + [(PEERS, n) for n in PEERS.names()]
)
def test_every_layer_declares_a_cost_model(registry, name):
    layer = _layer(registry, name)
    target = torch.randint(0, V, (N,))
    for cost in (layer.train_cost(target), layer.log_prob_cost(target)):
        assert cost.flops > 0 and cost.bytes > 0


def test_matmul_rate_reports_each_shape_and_the_best():
    rate = measure_matmul_rate([(16, 8, 32), (8, 8, 8)], torch.device("cpu"), repeats=1, min_time=0.001)
    assert [(s["m"], s["k"], s["n"]) for s in rate["shapes"]] == [(16, 8, 32), (8, 8, 8)]
    assert rate["best_gflops"] == max(s["gflops"] for s in rate["shapes"]) > 0


def test_bandwidth_reports_positive_rates_and_the_slower_of_gather_and_scatter():
    rates = measure_bandwidth(
        torch.device("cpu"),
        stream_elements=1 << 12,
        table_rows=64,
        width=8,
        gathered_rows=32,
        repeats=1,
        min_time=0.001,
    )
    assert all(rates[key] > 0 for key in ("stream_gbps", "gather_gbps", "scatter_gbps"))
    assert rates["gather_scatter_gbps"] == min(rates["gather_gbps"], rates["scatter_gbps"])


def test_roofline_is_the_larger_of_compute_and_memory_time():
    machine = {"best_gflops": 100.0, "stream_gbps": 10.0, "gather_scatter_gbps": 2.0}
    # 1e9 flops take 10 ms; 1e8 streamed bytes 10 ms and 1e8 gathered bytes 50 ms.
    assert roofline_seconds(1e9, 1e8, 0.0, machine) == pytest.approx(0.01)
    assert roofline_seconds(1e9, 2e8, 1e8, machine) == pytest.approx(0.06)
    assert roofline_seconds(1e10, 1e8, 1e8, machine) == pytest.approx(0.1)
    step = OperationTiming(speedup=1.0, q1=1.0, q3=1.0, min=1.0, max=1.0, seconds=0.02, full_seconds=0.02, repeats=1)
    rows = [
        SpeedRow(
            "a",
            "a",
            "layer",
            10,
            4,
            2,
            2,
            timings={"train": step},
            achieved_gflops=50.0,
            required_flops=1e9,
            required_bytes=1e8,
            required_gathered_bytes=0.0,
        ),
        SpeedRow("b", "b", "layer", 10, 4, 2, 2, timings={"train": step}),
    ]
    add_roofline_fractions(rows, 100.0, {"10": machine})
    assert rows[0].matmul_fraction == pytest.approx(0.5)
    assert rows[0].roofline_fraction == pytest.approx(0.5)
    assert rows[1].roofline_fraction is None and rows[1].matmul_fraction is None


def test_each_row_is_held_to_the_bandwidth_measured_on_a_table_of_its_own_vocabulary_size():
    step = OperationTiming(speedup=1.0, q1=1.0, q3=1.0, min=1.0, max=1.0, seconds=0.1, full_seconds=0.1, repeats=1)

    def gathering_row(vocab_size: int) -> SpeedRow:
        # 1e8 bytes, all gathered as rows: memory-bound at any of the rates below.
        return SpeedRow(
            "a",
            "a",
            "layer",
            vocab_size,
            4,
            2,
            2,
            timings={"train": step},
            required_flops=1.0,
            required_bytes=1e8,
            required_gathered_bytes=1e8,
        )

    rows = [gathering_row(10), gathering_row(1000), gathering_row(5)]
    bandwidth = {
        "10": {"stream_gbps": 10.0, "gather_scatter_gbps": 4.0},
        "1000": {"stream_gbps": 10.0, "gather_scatter_gbps": 2.0},
    }
    add_roofline_fractions(rows, 100.0, bandwidth)
    # 1e8 bytes take 25 ms at 4 GB/s and 50 ms at 2 GB/s, of a 100 ms step.
    assert [row.roofline_fraction for row in rows[:2]] == [pytest.approx(0.25), pytest.approx(0.5)]
    assert rows[2].roofline_fraction is None  # no probe at that V: no roofline rather than another V's


def test_the_probe_table_has_the_weights_shape_up_to_a_bound():
    assert probe_table_rows(10_000, 256) == 10_000
    assert probe_table_rows(1_000_000, 256) == 1_000_000  # 1 GiB, the V = 1M weight
    capped = probe_table_rows(100_000_000, 256)
    assert capped * 256 * 4 == MAX_PROBE_TABLE_BYTES
