"""Which rows the benchmark runs: every registered layer (once per declared variant), the peers,
and ``--outputs`` pattern selection with clear errors."""

from __future__ import annotations

import pytest

import bigvocab
from bigvocab.bench.harness.selection import all_candidates, candidate_by_label, select_candidates
from bigvocab.registry import OUTPUTS, PEERS, TREES


def labels(candidates) -> list[str]:
    return [c.label for c in candidates]


def test_every_registered_layer_and_every_peer_is_a_row():
    rows = all_candidates()
    methods = {c.method for c in rows}
    assert set(bigvocab.list_outputs()) <= methods
    assert set(PEERS.names()) <= methods
    for name in bigvocab.list_outputs():
        variants = OUTPUTS.get(name).variants
        assert {f"{name}[{v}]" for v in variants} <= set(labels(rows))
    assert {"neg[per-example]", "neg[shared]"} <= set(labels(rows))
    assert len(labels(rows)) == len(set(labels(rows)))


def test_no_pattern_selects_everything_with_full_first():
    chosen = select_candidates(None)
    assert chosen[0].label == "full"
    assert sorted(labels(chosen)) == sorted(labels(all_candidates()))


def test_patterns_select_by_label_or_method_and_full_always_leads():
    chosen = labels(select_candidates(["torch-*"]))
    assert chosen == ["full", "torch-adaptive", "torch-linear"]
    assert labels(select_candidates(["torch-linear", "full"])) == ["full", "torch-linear"]


def test_hsm_pattern_expands_to_every_tree_and_brackets_are_literal():
    assert labels(select_candidates(["hsm*"])) == ["full"] + [f"hsm[{v}]" for v in TREES.names()]
    # fnmatch would read "[class]" as a character class; an exact label wins.
    assert labels(select_candidates(["hsm[class]"])) == ["full", "hsm[class]"]
    assert candidate_by_label("hsm[class]").options == {"tree": "class"}


def test_a_pattern_matching_nothing_names_the_closest_row():
    with pytest.raises(bigvocab.ConfigError, match=r"'torch-linaer'.*did you mean 'torch-linear'"):
        select_candidates(["full", "torch-linaer"])
    with pytest.raises(bigvocab.ConfigError, match="valid: full"):
        select_candidates(["zzz*"])


def test_unknown_label_is_a_config_error():
    with pytest.raises(bigvocab.ConfigError, match="benchmark row"):
        candidate_by_label("nope")
