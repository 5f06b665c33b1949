"""Trees for the hierarchical softmax: structure, Huffman optimality, builders, saving, errors."""

from __future__ import annotations

import heapq
import math
from collections import Counter

import pytest
import torch

from bigvocab.errors import CheckpointError, ConfigError
from bigvocab.outputs.trees import (
    Tree,
    balanced_tree,
    build_tree,
    class_tree,
    clustered_tree,
    huffman_tree,
    tree_from_codes,
)
from bigvocab.samplers.base import zipf_counts


def _count_sets() -> list[list[int]]:
    generator = torch.Generator().manual_seed(5)
    sets = [[5, 3, 2, 1, 1], [1, 1], [7] * 9, [1000, 1, 1, 1, 1, 1, 1, 1]]
    sets.append((1000 / torch.arange(1, 65)).round().long().tolist())
    sets.append(torch.randint(0, 50, (40,), generator=generator).tolist())
    sets.append(torch.randint(1, 10**6, (63,), generator=generator).tolist())
    return [s for s in sets if sum(s) > 0]


def _entropy_bits(counts) -> float:
    total = sum(counts)
    return -sum(c / total * math.log2(c / total) for c in counts if c > 0)


def _is_prefix_free(codes) -> bool:
    ordered = sorted(codes)
    return all(b[: len(a)] != a for a, b in zip(ordered, ordered[1:]))


def _heap_huffman_cost(counts) -> float:
    """Average Huffman code length by an independent heapq merge: sum of merged weights / total."""
    heap = [float(c) for c in counts]
    heapq.heapify(heap)
    cost = 0.0
    while len(heap) > 1:
        merged = heapq.heappop(heap) + heapq.heappop(heap)
        cost += merged
        heapq.heappush(heap, merged)
    return cost / sum(counts)


# ---------------------------------------------------------------------- Huffman
@pytest.mark.parametrize("counts", _count_sets())
def test_huffman_codes_are_prefix_free_and_optimal(counts):
    tree = huffman_tree(counts)
    codes = tree.codes()
    assert len(set(codes)) == len(counts) and _is_prefix_free(codes)
    assert tree.is_binary and tree.num_nodes == len(counts) - 1
    assert tree.average_code_length(counts) == pytest.approx(_heap_huffman_cost(counts), rel=1e-12)
    entropy = _entropy_bits(counts)
    # Shannon: H <= L < H + 1 for an optimal prefix code.
    assert entropy - 1e-9 <= tree.average_code_length(counts) < entropy + 1
    # A more frequent class never gets a longer code.
    depth = tree.leaf_depth.tolist()
    for i in range(len(counts)):
        for j in range(len(counts)):
            if counts[i] > counts[j]:
                assert depth[i] <= depth[j]


def test_huffman_known_example():
    tree = huffman_tree([5, 3, 2, 1, 1])
    assert tree.leaf_depth.tolist() == [1, 2, 3, 4, 4]
    assert tree.average_code_length([5, 3, 2, 1, 1]) == pytest.approx(25 / 12)
    assert tree.depth == 4


def test_tree_paths_agree_with_codes_and_structure():
    tree = huffman_tree(zipf_counts(50))
    offsets, nodes, codes = tree.paths()
    for leaf in range(50):
        path = nodes[offsets[leaf] : offsets[leaf + 1]].tolist()
        assert path == tree.path(leaf) and path[0] == 0
        assert tuple(codes[offsets[leaf] : offsets[leaf + 1]].tolist()) == tree.code(leaf)
        # Each step goes to the child at the recorded position.
        for step, (node, position) in enumerate(zip(path, tree.code(leaf))):
            child = int(tree.children[tree.child_offsets[node] + position])
            expected = path[step + 1] if step + 1 < len(path) else tree.num_nodes + leaf
            assert child == expected
    # Breadth-first numbering: parents come first and depths never decrease.
    assert (tree.node_parent[1:] < torch.arange(1, tree.num_nodes)).all()
    assert (tree.node_depth[1:] >= tree.node_depth[:-1]).all()


# ---------------------------------------------------------------------- other builders
@pytest.mark.parametrize("num_leaves", [2, 3, 5, 8, 37, 64])
def test_balanced_tree_depths(num_leaves):
    tree = balanced_tree(num_leaves)
    depths = set(tree.leaf_depth.tolist())
    assert max(depths) == math.ceil(math.log2(num_leaves)) and max(depths) - min(depths) <= 1
    assert _is_prefix_free(tree.codes())
    # Leaves stay in id order, left to right.
    assert tree.codes() == sorted(tree.codes())


def test_balanced_tree_with_a_permutation_or_seed():
    base = balanced_tree(20)
    permutation = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    shuffled = balanced_tree(20, permutation=permutation)
    for slot, leaf in enumerate(permutation.tolist()):
        assert shuffled.code(leaf) == base.code(slot)
    assert balanced_tree(20, seed=3) == balanced_tree(20, seed=3)
    assert balanced_tree(20, seed=3) != base
    with pytest.raises(ConfigError, match="permutation"):
        balanced_tree(4, permutation=[0, 1, 1, 2])


def test_random_tree_is_a_balanced_tree_over_an_order_from_the_global_rng():
    torch.manual_seed(7)
    first = build_tree("random", 50)
    torch.manual_seed(7)
    assert build_tree("random", 50) == first
    assert first != balanced_tree(50)
    assert sorted(first.codes()) == sorted(balanced_tree(50).codes())


def test_class_tree_bins_by_unigram_mass():
    counts = (10_000 / torch.arange(1, 65)).round().tolist()
    tree = class_tree(counts, num_classes=8)
    assert tree.depth == 2 and set(tree.leaf_depth.tolist()) == {2}
    classes = tree.leaf_parent.tolist()
    # Classes are runs of the frequency order, each holding at most 1/C of the mass plus its last word.
    assert classes == sorted(classes)
    total = sum(counts)
    for c in set(classes):
        members = [counts[w] for w in range(64) if classes[w] == c]
        assert sum(members) / total <= 1 / 8 + members[-1] / total + 1e-12
    assert int(tree.arity[0]) == len(set(classes)) <= 8
    # Default C = round(sqrt(V)).
    assert int(class_tree(counts).arity[0]) <= 8


def test_class_tree_sorts_unsorted_counts():
    tree = class_tree([1, 100, 1, 100], num_classes=2)
    assert tree.leaf_parent[1] == tree.leaf_parent[3] != tree.leaf_parent[0]


def test_clustered_tree_recovers_nested_clusters():
    generator = torch.Generator().manual_seed(2)
    # Four blobs on a line: {0, 2} and {20, 22} are pairs of nearby blobs far from each other.
    centres = torch.tensor([0.0, 2.0, 20.0, 22.0])
    blob = torch.arange(32) % 4
    vectors = torch.randn(32, 3, generator=generator) * 0.1
    vectors[:, 0] += centres[blob]
    tree = clustered_tree(vectors)
    assert tree.is_binary and tree.num_leaves == 32
    first = {b: {tree.code(w)[0] for w in range(32) if blob[w] == b} for b in range(4)}
    two = {b: {tree.code(w)[:2] for w in range(32) if blob[w] == b} for b in range(4)}
    assert all(len(s) == 1 for s in two.values()) and len(set().union(*two.values())) == 4
    assert first[0] == first[1] != first[2] == first[3]


def test_clustered_tree_handles_identical_vectors():
    tree = clustered_tree(torch.ones(10, 2))
    assert tree.depth == math.ceil(math.log2(10))


def test_tree_from_codes_round_trip_and_nary():
    tree = huffman_tree(zipf_counts(30))
    assert tree_from_codes(tree.codes()) == tree
    assert tree_from_codes(["".join(map(str, c)) for c in tree.codes()]) == tree
    # Digits 0, 2, 5 at the root become positions 0, 1, 2; node "5" has a single child.
    nary = tree_from_codes([[0, 0], [0, 1], [2], [5, 0], [0, 2]])
    assert nary.code(0) == (0, 0) and nary.code(2) == (1,) and nary.code(3) == (2, 0) and nary.code(4) == (0, 2)
    assert sorted(nary.arity.tolist()) == [1, 3, 3]


@pytest.mark.parametrize(
    "codes, match",
    [
        (["0", "01"], "prefix"),
        (["01", "01"], "same code"),
        (["0", ""], "non-empty"),
        (["0", "x"], "digits"),
        ([[0], [-1]], "non-negative"),
        (["0"], "at least 2"),
    ],
)
def test_tree_from_codes_rejects_bad_codes(codes, match):
    with pytest.raises(ConfigError, match=match):
        tree_from_codes(codes)


# ---------------------------------------------------------------------- validation and saving
@pytest.mark.parametrize(
    "arrays, match",
    [
        (([-1, -1], [0, 0], [0, 1], [0, 0]), "exactly one"),
        (([-1, 2], [0, 0], [0, 0], [0, 1]), r"\[0, 2\)"),
        (([-1, 0], [0, 1], [0, 1], [1, 0]), "exactly 0, 1"),
        (([-1, 2, 1], [0, 0, 0], [0, 0], [0, 1]), "reached from the root"),
        (([-1, 0], [0, 0], [0, 0], [1, 2]), "no children"),
        (([-1], [0], [0.5, 0], [0, 1]), "integers"),
    ],
)
def test_invalid_trees_are_named(arrays, match):
    with pytest.raises(ConfigError, match=match):
        Tree(*arrays)


def test_canonical_numbering_is_breadth_first():
    # Internal nodes given as 0 = child, 1 = root.
    tree = Tree([1, -1], [0, 0], [0, 0, 1], [0, 1, 1])
    assert tree.node_parent.tolist() == [-1, 0] and tree.codes() == [(0, 0), (0, 1), (1,)]


def test_save_and_load(tmp_path):
    tree = class_tree(zipf_counts(40))
    tree.save(tmp_path / "tree.pt")
    assert Tree.load(tmp_path / "tree.pt") == tree
    assert Tree.from_dict(tree.to_dict()) == tree
    torch.save({"something": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="does not hold a tree"):
        Tree.load(tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not found"):
        Tree.load(tmp_path / "missing.pt")


def test_build_tree_defaults_and_errors():
    assert build_tree("huffman", 20, counts=zipf_counts(20)) == huffman_tree(zipf_counts(20))
    with pytest.raises(ConfigError, match="tree='huffman' needs counts="):
        build_tree("huffman", 20)
    assert build_tree("class", 20, counts=list(range(20, 0, -1))) == class_tree(list(range(20, 0, -1)))
    with pytest.raises(ConfigError, match="did you mean 'huffman'"):
        build_tree("hufman", 20)
    with pytest.raises(ConfigError, match="needs vectors="):
        build_tree("clustered", 20)
    with pytest.raises(ConfigError, match=r"shape \(20, D\)"):
        build_tree("clustered", 20, vectors=torch.randn(19, 3))
    with pytest.raises(ConfigError, match="counts has 3 entries"):
        build_tree("huffman", 20, counts=[1, 2, 3])
    with pytest.raises(ConfigError, match="non-negative"):
        huffman_tree([1, -1, 2])


# ---------------------------------------------------------------------- Brown (real data, optional)
def test_brown_huffman_vs_balanced_code_length(data_dir):
    """Morin & Bengio (2005) quote 9.16 bits (Huffman-like) vs 13.3 (balanced) for a 10k vocabulary."""
    brown = data_dir / "brown"
    if not brown.is_dir():
        pytest.skip(f"Brown corpus not found at {brown}")
    words = Counter()
    for path in sorted(brown.glob("c[a-r][0-9][0-9]")):
        words.update(token.rsplit("/", 1)[0].lower() for token in path.read_text(encoding="latin-1").split())
    top = [count for _, count in words.most_common(9_999)]
    counts = top + [sum(words.values()) - sum(top)]  # the rest share one unknown-word class
    huffman = huffman_tree(counts).average_code_length(counts)
    balanced = balanced_tree(len(counts)).average_code_length(counts)
    entropy = _entropy_bits(counts)
    print(f"\nBrown, V=10,000: unigram entropy {entropy:.2f} bits, Huffman {huffman:.2f}, balanced {balanced:.2f}")
    assert entropy <= huffman < entropy + 1
    assert huffman < balanced and 13 <= balanced <= 14
