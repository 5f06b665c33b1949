"""Hierarchical softmax against a brute-force product over each path, for every kind of tree."""

from __future__ import annotations

import pytest
import torch
from reference_checks import assert_matches_reference, assert_topk_is_exact

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.trees import balanced_tree, huffman_tree, tree_from_codes
from bigvocab.samplers.base import zipf_counts

V, H = 29, 5


def _counts() -> list[int]:
    return (1000 / torch.arange(1, V + 1)).round().long().tolist()


def _trees() -> dict[str, dict]:
    """Layer options for every tree kind, plus user trees with n-ary and single-child nodes."""
    vectors = torch.randn(V, 3, generator=torch.Generator().manual_seed(4))
    nary_codes = [[i % 3, (i // 3) % 4, i // 12] for i in range(24)] + [[3, 0], [3, 1], [4, 0, 0], [5], [6]]
    return {
        "huffman": {"tree": "huffman", "counts": _counts()},
        "balanced": {"tree": "balanced"},
        "random": {"tree": "random"},
        "class": {"tree": "class", "counts": _counts()},
        "clustered": {"tree": "clustered", "vectors": vectors},
        "user-nary": {"tree": tree_from_codes(nary_codes)},
        "zipf-default": {"counts": zipf_counts(V)},
    }


def _layer(options: dict, *, bias: bool = True, **extra) -> bigvocab.OutputLayer:
    torch.manual_seed(0)
    layer = bigvocab.create_output("hsm", H, V, bias=bias, **options, **extra).double()
    with torch.no_grad():
        for param in layer.parameters():
            param.normal_(0, 0.8)
    return layer


def _naive_log_prob(layer, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log p(w | h) as an explicit product along ``Tree.path``/``Tree.code``: at each node a softmax
    over [0, h.u_r + b_r for the node's rows], rows numbered node by node in id order."""
    tree = layer.tree
    arity = tree.arity.tolist()
    first_row = [0]
    for a in arity:
        first_row.append(first_row[-1] + a - 1)
    out = []
    for i, leaf in enumerate(target.tolist()):
        total = hidden.new_zeros(())
        for node, position in zip(tree.path(leaf), tree.code(leaf), strict=True):
            logits = [hidden.new_zeros(())]
            for row in range(first_row[node], first_row[node] + arity[node] - 1):
                logit = hidden[i] @ layer.weight[row]
                logits.append(logit + layer.bias[row] if layer.bias is not None else logit)
            total = total + torch.log_softmax(torch.stack(logits), 0)[position]
        out.append(total)
    return torch.stack(out)


@pytest.fixture(params=list(_trees()), ids=str)
def options(request):
    return _trees()[request.param]


def test_log_softmax_matches_the_path_products(options):
    layer = _layer(options)
    hidden = torch.randn(3, H, dtype=torch.float64)
    log_p = layer.log_softmax(hidden)
    torch.testing.assert_close(log_p.logsumexp(1), torch.zeros(3, dtype=torch.float64), atol=1e-12, rtol=0)
    every = torch.arange(V)
    for row in range(3):
        naive = _naive_log_prob(layer, hidden[row].expand(V, H), every)
        torch.testing.assert_close(log_p[row], naive, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tree", ["huffman", "user-nary"])
def test_log_softmax_in_row_chunks_matches_the_path_products(tree, bias):
    """40 rows with tiny chunks: the node-major pass runs over several row chunks (at least 16
    rows each) and must give every row the path products, with and without a bias."""
    layer = _layer(_trees()[tree], bias=bias, max_chunk_elements=H)
    hidden = torch.randn(40, H, dtype=torch.float64)
    log_p = layer.log_softmax(hidden)
    torch.testing.assert_close(log_p, _layer(_trees()[tree], bias=bias).log_softmax(hidden), atol=1e-12, rtol=0)
    for row in (0, 17, 39):
        naive = _naive_log_prob(layer, hidden[row].expand(V, H), torch.arange(V))
        torch.testing.assert_close(log_p[row], naive, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_compiled_log_softmax_matches_the_differentiable_pass(monkeypatch, bias, dtype):
    """Without autograd a binary tree takes the compiled top-down pass (rows over threads, row
    chunks); it must equal the differentiable level-by-level pass and the path products."""
    from bigvocab.kernels import threads as kernel_threads
    from bigvocab.kernels.trees import binary_leaf_log_probs

    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)  # small sizes, yet split over threads

    layer = _layer(_trees()["huffman"], bias=bias, max_chunk_elements=H).to(dtype)
    hidden = torch.randn(37, H, dtype=dtype)
    with torch.no_grad():
        compiled = layer.log_softmax(hidden)
        logits = hidden[:5] @ layer.weight.t() + (layer.bias if bias else 0)
        threaded = binary_leaf_log_probs(logits, layer._children.view(-1, 2), threads=3)
        # Buffers passed in (as the chunk loop reuses them) are overwritten whole, stale values or not.
        out = torch.full((5, V), float("nan"), dtype=dtype)
        into = binary_leaf_log_probs(
            logits,
            layer._children.view(-1, 2),
            threads=3,
            out=out,
            scratch=torch.full((5, V - 1), float("nan"), dtype=dtype),
        )
    differentiable = layer.log_softmax(hidden).detach()
    tolerance = {"atol": 1e-12, "rtol": 1e-12} if dtype == torch.float64 else {}
    torch.testing.assert_close(compiled, differentiable, **tolerance)
    torch.testing.assert_close(threaded, differentiable[:5], **tolerance)
    assert into.data_ptr() == out.data_ptr()
    torch.testing.assert_close(into, differentiable[:5], **tolerance)
    if dtype == torch.float64:
        naive = _naive_log_prob(layer, hidden[36].expand(V, H), torch.arange(V))
        torch.testing.assert_close(compiled[36], naive.detach(), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_compiled_pass_ignores_the_padding_of_wider_logit_rows(dtype):
    """The exact pass writes its node logits into rows padded to an aligned width; the columns
    past the V - 1 nodes (NaN here) must not reach any leaf, and too narrow rows are refused."""
    from bigvocab.kernels.trees import ROW_ALIGNMENT, aligned_width, binary_leaf_log_probs

    layer = _layer(_trees()["huffman"], bias=True).to(dtype)
    children = layer._children.view(-1, 2)
    width = aligned_width(V - 1)
    assert width % ROW_ALIGNMENT == 0 and V - 1 <= width < V - 1 + ROW_ALIGNMENT
    hidden = torch.randn(6, H, dtype=dtype)
    with torch.no_grad():
        logits = hidden @ layer.weight.t() + layer.bias
        padded = torch.full((6, width + ROW_ALIGNMENT), float("nan"), dtype=dtype)
        padded[:, : V - 1] = logits
        torch.testing.assert_close(
            binary_leaf_log_probs(padded, children, threads=2),
            binary_leaf_log_probs(logits, children, threads=2),
            rtol=0,
            atol=0,
        )
        with pytest.raises(ValueError, match=f"{V - 1} nodes need logits of at least {V - 1} columns"):
            binary_leaf_log_probs(logits[:, :-1], children, threads=1)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tree", ["class", "user-nary"])
def test_compiled_general_pass_matches_the_path_products(monkeypatch, tree, bias):
    """Without autograd a float32 tree of any arity takes the compiled pass (per node a shifted
    log-sum-exp; rows over threads, row chunks): it must equal the differentiable pass in float32
    and the path products in float64, and read no column past the V - 1 child logits."""
    from bigvocab.kernels import threads as kernel_threads
    from bigvocab.kernels.trees import general_leaf_log_probs

    monkeypatch.setattr(kernel_threads, "MIN_WORK_PER_THREAD", 1)  # small sizes, yet split over threads
    layer = _layer(_trees()[tree], bias=bias, max_chunk_elements=H)
    assert not layer._binary
    hidden = torch.randn(37, H, dtype=torch.float64)
    wide = layer.float()
    with torch.no_grad():
        compiled = wide.log_softmax(hidden.float())
        logits = hidden[:5].float() @ wide.weight.t() + (wide.bias if bias else 0)
        padded = torch.full((5, V - 1 + 7), float("nan"))
        padded[:, : V - 1] = logits
        from_padded = general_leaf_log_probs(padded, wide._children, wide._child_offsets, wide._leaf_runs, threads=3)
    torch.testing.assert_close(compiled, wide.log_softmax(hidden.float().requires_grad_()).detach())
    torch.testing.assert_close(from_padded, compiled[:5], rtol=0, atol=0)
    every = torch.arange(V)
    for row in (0, 36):
        naive = _naive_log_prob(layer.double(), hidden[row].expand(V, H), every).detach()
        torch.testing.assert_close(compiled[row].double(), naive, atol=2e-5, rtol=0)


@pytest.mark.parametrize("kind", ["class", "user-nary", "huffman"])
def test_leaf_runs_name_the_nodes_whose_children_are_consecutive_leaves(kind):
    tree = _layer(_trees()[kind]).tree
    want = []
    for node in range(tree.num_nodes):
        kids = tree.children[tree.child_offsets[node] : tree.child_offsets[node + 1]].tolist()
        run = all(k >= tree.num_nodes for k in kids) and kids == list(range(kids[0], kids[0] + len(kids)))
        want.append(kids[0] - tree.num_nodes if run else -1)
    assert tree.leaf_runs().tolist() == want
    if kind == "class":  # its classes hold frequency-sorted, consecutive ids; its root holds classes
        assert want[0] == -1 and all(first >= 0 for first in want[1:])


def test_compiled_general_pass_spreads_nan_below_its_node_and_refuses_bad_input():
    from bigvocab.kernels.trees import general_leaf_log_probs

    layer = _layer(_trees()["class"], bias=False).float()
    children, offsets, runs = layer._children, layer._child_offsets, layer._leaf_runs
    logits = torch.randn(2, V - 1)
    logits[1, 0] = float("nan")  # a child logit of the root: every leaf of row 1 is NaN
    out = general_leaf_log_probs(logits, children, offsets, runs, threads=1)
    assert torch.isfinite(out[0]).all() and torch.isnan(out[1]).all()
    logits[1, 0] = float("inf")  # as torch's log-sum-exp: inf - inf
    assert torch.isnan(general_leaf_log_probs(logits, children, offsets, runs, threads=1)[1]).all()
    logits[1, 0], logits[1, -1] = 0.0, float("-inf")  # a leaf that can never be chosen
    out = general_leaf_log_probs(logits, children, offsets, runs, threads=1)
    assert torch.isfinite(out[1].logsumexp(0)) and (out[1] == float("-inf")).sum() == 1
    with pytest.raises(ValueError, match=f"{V - 1} child logits need at least that many columns"):
        general_leaf_log_probs(logits[:, :-1], children, offsets, runs, threads=1)
    with pytest.raises(TypeError, match="float32"):
        general_leaf_log_probs(logits.double(), children, offsets, runs, threads=1)


@pytest.mark.parametrize("bias", [True, False])
def test_loss_gradients_match_the_path_products(options, bias):
    layer = _layer(options, bias=bias)
    hidden = torch.randn(7, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 28, 3, 3, 17, 9, 1])
    ours = layer.loss(hidden, target, reduction="none")
    assert_matches_reference(ours, -_naive_log_prob(layer, hidden, target), [hidden, *layer.parameters()])


def test_log_prob_equals_gathered_log_softmax(options):
    layer = _layer(options)
    hidden = torch.randn(2, 4, H, dtype=torch.float64)
    target = torch.randint(0, V, (2, 4))
    torch.testing.assert_close(
        layer.log_prob(hidden, target), layer.log_softmax(hidden).gather(2, target[..., None]).squeeze(2)
    )


@pytest.mark.parametrize("k", [1, 3, 10, V])
def test_topk_is_exact(options, k):
    layer = _layer(options)
    hidden = torch.randn(6, H, dtype=torch.float64) * 2
    assert_topk_is_exact(layer, hidden, k)


def test_topk_falls_back_to_full_scoring_when_the_search_is_too_wide():
    layer = _layer({"tree": "huffman", "counts": _counts()})
    hidden = torch.randn(5, H, dtype=torch.float64)
    expected = layer.log_softmax(hidden).topk(4, dim=1)
    for budget in (0, 3, 10**6):
        layer.search_budget = budget
        values, ids = layer.topk(hidden, 4)
        torch.testing.assert_close(values, expected.values, atol=1e-12, rtol=0)
        assert torch.equal(ids, expected.indices)


def test_small_chunks_give_the_same_results():
    options = {"tree": "class", "counts": _counts()}
    hidden = torch.randn(6, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (6,))
    results = []
    for chunk in (None, H, 3 * H):
        layer = _layer(options, max_chunk_elements=chunk)
        loss = layer.loss(hidden, target)
        grads = torch.autograd.grad(loss, [hidden, layer.weight])
        results.append((loss, grads[0], grads[1].to_dense(), layer.log_softmax(hidden), layer.topk(hidden, 5)))
    for other in results[1:]:
        for a, b in zip(results[0][:4], other[:4]):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)
        assert torch.equal(results[0][4][1], other[4][1])


def test_training_touches_only_the_path_rows():
    layer = _layer({"tree": "huffman", "counts": _counts()})
    assert layer.sparse_grad
    target = torch.tensor([0, 20, 20])
    layer.loss(torch.randn(3, H, dtype=torch.float64), target).backward()
    assert layer.weight.grad.is_sparse and layer.bias.grad.is_sparse
    touched = set(layer.weight.grad.coalesce().indices()[0].tolist())
    # Binary canonical trees: node n owns row n.
    on_paths = {node for leaf in target.tolist() for node in layer.tree.path(leaf)}
    assert touched == on_paths
    assert len(touched) < V - 1


def test_an_sgd_step_updates_only_the_path_rows():
    layer = _layer({"tree": "balanced"})
    before = layer.weight.detach().clone()
    optimiser = torch.optim.SGD(layer.parameters(), lr=0.5)
    layer.loss(torch.randn(2, H, dtype=torch.float64), torch.tensor([4, 4])).backward()
    optimiser.step()
    changed = set((layer.weight.detach() != before).any(1).nonzero().flatten().tolist())
    assert changed == set(layer.tree.path(4))


def test_state_dict_carries_the_tree():
    trained = _layer({"tree": "huffman", "counts": _counts()})
    fresh = _layer({"tree": "balanced"})
    assert fresh.tree != trained.tree
    fresh.load_state_dict(trained.state_dict())
    assert fresh.tree == trained.tree
    hidden, target = torch.randn(4, H, dtype=torch.float64), torch.randint(0, V, (4,))
    torch.testing.assert_close(fresh.log_prob(hidden, target), trained.log_prob(hidden, target))
    torch.testing.assert_close(fresh.topk(hidden, 3), trained.topk(hidden, 3))


def test_default_tree_is_huffman_of_the_counts():
    layer = bigvocab.create_output("hsm", H, V, counts=zipf_counts(V))
    assert layer.tree == huffman_tree(zipf_counts(V))
    assert layer.weight.shape == (V - 1, H)


@pytest.mark.parametrize("tree", ["huffman", "class"])
def test_a_tree_that_reads_counts_refuses_to_guess_them(tree):
    with pytest.raises(ConfigError, match=rf"tree='{tree}' needs counts= .*choose tree='balanced' or 'random'"):
        bigvocab.create_output("hsm", H, V, tree=tree)
    assert bigvocab.create_output("hsm", H, V, tree="balanced").tree.depth > 1  # needs none


def test_class_tree_has_one_row_per_non_reference_child():
    layer = _layer({"tree": "class", "counts": _counts()})
    assert layer.tree.depth == 2 and layer.tree.max_arity > 2
    assert layer.weight.shape == (V - 1, H)


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match="10 leaves but num_classes=29"):
        bigvocab.create_output("hsm", H, V, tree=balanced_tree(10))
    with pytest.raises(ConfigError, match="needs vectors="):
        bigvocab.create_output("hsm", H, V, tree="clustered")
    with pytest.raises(ConfigError, match="did you mean 'balanced'"):
        bigvocab.create_output("hsm", H, V, tree="balance")
    with pytest.raises(ConfigError, match="a name or a Tree"):
        bigvocab.create_output("hsm", H, V, tree=3)
