"""A tiny complete ``run_bench``: every registered layer is a row of every table, ok or with
its error; a layer that fails to build is reported, not dropped; the files are written."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

import pytest
import torch
from tiny_quality import tiny_quality

from bigvocab.bench import BenchConfig, all_candidates, run_bench
from bigvocab.outputs.base import OutputLayer
from bigvocab.registry import OUTPUTS

pytestmark = pytest.mark.slow


class BrokenLayer(OutputLayer):
    """Registered only inside a test: its constructor fails the way a bad layer would."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        raise RuntimeError("this layer cannot be built")


def tiny_config(tmp_path, **overrides) -> BenchConfig:
    settings = dict(
        vocab_sizes=(300,),
        hidden=8,
        batch=16,
        repeats=1,
        num_samples=10,
        min_time=0.0,
        out=tmp_path,
        progress=False,
        measure_memory=False,  # its child process is tested in test_bench_memory.py
        plots=False,  # tested in test_bench_report.py
        quality=tiny_quality(train_tokens=1_000, batch_size=64),
    )
    settings.update(overrides)
    return BenchConfig.quick(**settings)


@pytest.fixture(scope="module")
def broken_registered():
    # monkeypatch is function-scoped; the module-scoped run below needs the entry for its whole life.
    OUTPUTS._factories["broken-test-layer"] = BrokenLayer
    yield
    del OUTPUTS._factories["broken-test-layer"]


@pytest.fixture(scope="module")
def run(broken_registered, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    stream = io.StringIO()
    results = run_bench(tiny_config(out), stream=stream)
    return results, out, stream.getvalue()


def test_every_row_appears_in_every_table(run):
    results, _, _ = run
    labels = [c.label for c in all_candidates()]
    assert "broken-test-layer" in labels
    assert sorted(results["approaches"]) == sorted(labels)
    assert [r.approach for r in results["speed"]] == results["approaches"]
    datasets = list(dict.fromkeys(r.dataset for r in results["quality"]))
    assert len(datasets) == 2
    for dataset in datasets:
        assert [r.approach for r in results["quality"] if r.dataset == dataset] == results["approaches"]
    assert [line["approach"] for line in results["summary"]] == results["approaches"]


def test_a_layer_that_cannot_be_built_is_an_error_row(run):
    results, _, printed = run
    rows = [r for r in results["speed"] + results["quality"] if r.approach == "broken-test-layer"]
    assert len(rows) == 3
    for row in rows:
        assert row.status == "error"
        assert "RuntimeError: this layer cannot be built" in row.error
    assert "ERROR RuntimeError: this layer cannot be built" in printed


def test_reference_and_peers_are_measured(run):
    results, _, _ = run
    speed = {r.approach: r for r in results["speed"]}
    for label in ("full", "torch-linear", "torch-adaptive"):
        row = speed[label]
        assert row.status == "ok", row.error
        for op in ("train", "log_softmax", "topk"):
            assert row.timings[op].speedup > 0 and row.timings[op].seconds > 0
        assert row.required_flops > 0 and 0 < row.matmul_fraction and 0 < row.roofline_fraction
    assert speed["full"].params_pct == 100.0
    assert speed["torch-adaptive"].params_pct < 100.0
    quality = [r for r in results["quality"] if r.approach == "full"]
    for row in quality:
        assert row.status == "ok", row.error
        # One pass over 1,000 tokens cannot beat the floor; it must at least be finite and above it.
        assert row.ppl_ratio > 1.0 and row.test_ppl < 10 * row.vocab_size


def test_files_are_written_and_consistent(run):
    results, out, _ = run
    loaded = json.loads((out / "results.json").read_text())
    assert loaded["approaches"] == results["approaches"]
    assert [row["approach"] for row in loaded["speed"]] == results["approaches"]
    assert loaded["speed"][0]["timings"] == asdict(results["speed"][0])["timings"]
    assert loaded["quality"][0]["curve"] == asdict(results["quality"][0])["curve"]
    assert loaded["machine"]["torch"] == torch.__version__
    with (out / "results.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == len(results["speed"]) + len(results["quality"])
    report = (out / "report.md").read_text()
    for label in results["approaches"]:
        assert f"| {label} |" in report


def test_skipping_both_phases_still_gives_the_rows(tmp_path):
    results = run_bench(tiny_config(tmp_path, skip_speed=True, skip_quality=True, outputs=["torch-*"]))
    assert results["speed"] == [] and results["quality"] == []
    assert [line["approach"] for line in results["summary"]] == ["full", "torch-adaptive", "torch-linear"]


def test_search_layers_also_get_a_fitted_topk_timing(run):
    """Layers that prune their exact top-k with probability bounds (they declare topk_by_search:
    hsm, adaptive, char) get a second top-k timing on a fitted copy (with the target probability
    it reached); the others do not."""
    results, _, _ = run
    for row in results["speed"]:
        if row.status != "ok":
            continue
        searched = row.method in OUTPUTS and OUTPUTS.get(row.method).topk_by_search
        assert ("topk_fitted" in row.timings) == searched, row.approach
        if searched:
            assert 0.0 < row.topk_fitted_target_p <= 1.0


def test_the_fitted_copy_is_exact_and_leaves_the_layer_alone():
    from bigvocab.bench.harness.operations import FittedTopk, make_workload
    from bigvocab.outputs.factory import create_output

    torch.manual_seed(0)
    counts = [1000 // (i + 1) + 1 for i in range(200)]
    layer = create_output("hsm", 8, 200, counts=counts)
    before = {name: value.clone() for name, value in layer.state_dict().items()}
    workload = make_workload(counts, 8, 16, 16, seed=0, device=torch.device("cpu"))
    fitted = FittedTopk(layer, workload)
    values, ids = fitted()
    with torch.no_grad():
        untrained = float(layer.log_prob(workload.eval_hidden, workload.eval_target).exp().mean())
        expected = fitted.fitted.log_softmax(workload.eval_hidden).topk(10, dim=1)
    assert fitted.target_probability > untrained
    assert torch.equal(ids, expected.indices) and torch.allclose(values, expected.values, atol=1e-5)
    assert all(torch.equal(before[name], value) for name, value in layer.state_dict().items())
