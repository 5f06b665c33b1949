"""The report writers (JSON, CSV, markdown), the summary table and the plots, on hand-made rows."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace

import pytest

from bigvocab.bench.harness import formatting as fmt
from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.plots import spread_labels, write_plots
from bigvocab.bench.harness.rows import CurvePoint, OperationTiming, QualityRow, SpeedRow
from bigvocab.bench.report import (
    SUMMARY_COLUMNS,
    recommendation_lines,
    reproduce_command,
    summarise,
    write_csv,
    write_json,
    write_markdown,
)
from bigvocab.bench.suites.recommend import recommend


def timed(speedup: float, seconds: float = 0.01) -> OperationTiming:
    return OperationTiming(
        speedup=speedup,
        q1=speedup * 0.9,
        q3=speedup * 1.1,
        min=speedup * 0.8,
        max=speedup * 1.2,
        seconds=seconds,
        full_seconds=seconds * speedup,
        repeats=3,
    )


def speed_row(approach: str, vocab: int, speedup: float, **extra) -> SpeedRow:
    row = SpeedRow(
        approach=approach,
        method=approach,
        kind="layer",
        vocab_size=vocab,
        hidden=16,
        batch=8,
        eval_rows=8,
        timings={"train": timed(speedup), "log_softmax": timed(speedup / 2), "topk": timed(speedup / 3)},
        params=100,
        params_pct=50.0,
        peak_step_mib=1.5,
        required_flops=1e9,
        flops_source="formula",
        achieved_gflops=100.0,
        matmul_fraction=0.5,
    )
    return replace(row, **extra)


def quality_row(approach: str, dataset: str, ppl: float, ratio, **extra) -> QualityRow:
    """A row whose curve halves its excess perplexity from 1 s to 2 s of training."""
    early = None if ppl is None else 2 * ppl
    curve = [
        CurvePoint(1.0, 1.0, 500, 5, early, ratio and 2 * ratio),
        CurvePoint(2.0, 2.0, 1000, 10, ppl, ratio),
    ]
    return QualityRow(
        dataset=dataset,
        approach=approach,
        method=approach,
        kind="layer",
        vocab_size=500,
        train_tokens=1000,
        test_tokens=100,
        floor_ppl=None if ratio is None else ppl / ratio,
        threads=1,
        test_ppl=ppl,
        ppl_ratio=ratio,
        train_seconds=2.0,
        eval_seconds=0.1,
        curve=curve,
        **extra,
    )


@pytest.fixture
def results() -> dict:
    speed = [
        speed_row("full", 1000, 1.0),
        speed_row("hsm[huffman]", 1000, 5.0),
        speed_row("full", 10_000, 1.0),
        speed_row("hsm[huffman]", 10_000, 40.0, options={"tree": "huffman"}),
        SpeedRow("broken", "broken", "layer", 10_000, 16, 8, 8, status="error", error="ConfigError: bad"),
    ]
    quality = [
        quality_row("full", "small", 110.0, 1.1),
        quality_row("hsm[huffman]", "small", 120.0, 1.2),
        quality_row("full", "large", 1200.0, None),
        quality_row("broken", "large", None, None, status="error", error="boom"),
    ]
    out = {
        "config": BenchConfig.quick().to_dict(),
        "machine": {"cpu": "test cpu", "torch_threads": 2},
        "approaches": ["full", "hsm[huffman]", "broken"],
        "matmul": {"best_gflops": 200.0, "shapes": [{"m": 8, "k": 8, "n": 8, "gflops": 200.0}]},
        "speed": speed,
        "quality": quality,
        "notes": ["a note"],
        "wall_seconds": 12.0,
    }
    out["summary"] = summarise(out)
    out["recommendation"] = recommend(quality)
    return out


def test_summary_takes_the_largest_vocabulary_and_both_corpora(results):
    by_label = {line["approach"]: line for line in results["summary"]}
    assert list(by_label) == ["full", "hsm[huffman]", "broken"]
    hsm = by_label["hsm[huffman]"]
    assert hsm["speed_vocab"] == 10_000
    assert (hsm["train_speedup"], hsm["test_speedup"], hsm["topk_speedup"]) == (40.0, 20.0, 40.0 / 3)
    assert (hsm["ppl_small"], hsm["ppl_small_ratio"], hsm["ppl_large"]) == (120.0, 1.2, None)
    assert by_label["full"]["ppl_large"] == 1200.0 and by_label["full"]["ppl_large_ratio"] is None
    assert "ConfigError: bad" in by_label["broken"]["errors"] and "boom" in by_label["broken"]["errors"]


def test_json_round_trips_and_has_no_nan(results, tmp_path):
    results["speed"][0].timings["train"].q1 = math.nan
    path = write_json(results, tmp_path / "results.json")
    loaded = json.loads(path.read_text())
    assert loaded["speed"][0]["timings"]["train"]["q1"] is None
    assert loaded["speed"][3]["timings"]["train"]["speedup"] == 40.0
    assert loaded["speed"][3]["options"] == {"tree": "huffman"}
    assert loaded["speed"][4]["timings"] == {} and loaded["speed"][4]["error"] == "ConfigError: bad"
    assert loaded["summary"][1]["approach"] == "hsm[huffman]"
    assert loaded["quality"][1]["curve"][1] == {
        "budget_seconds": 2.0,
        "train_seconds": 2.0,
        "tokens": 1000,
        "steps": 10,
        "test_ppl": 120.0,
        "ppl_ratio": 1.2,
        "valid_ppl": None,
    }


def test_csv_has_one_line_per_row_and_the_union_of_columns(results, tmp_path):
    path = write_csv(results, tmp_path / "results.csv")
    with path.open() as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == len(results["speed"]) + len(results["quality"])
    assert {"phase", "approach", "train_speedup", "train_q1", "train_repeats", "dataset", "test_ppl", "options"} <= set(
        lines[0]
    )
    assert float(lines[3]["train_speedup"]) == 40.0 and float(lines[3]["topk_full_seconds"]) == pytest.approx(0.4 / 3)
    assert lines[3]["options"] == json.dumps({"tree": "huffman"})
    assert lines[4]["train_speedup"] == ""  # None is an empty cell
    assert lines[5]["phase"] == "quality" and float(lines[5]["test_ppl"]) == 110.0
    assert json.loads(lines[5]["curve"])[0]["test_ppl"] == 220.0


def test_markdown_has_the_comparison_table_raw_tables_and_machine(results, tmp_path):
    config = BenchConfig.quick()
    text = write_markdown(results, config, tmp_path / "report.md").read_text()
    assert "| " + " | ".join(SUMMARY_COLUMNS) + " |" in text
    assert "| hsm[huffman] | 40.0x | 20.0x | 120.0 (1.20x floor) | – | 50% |" in text
    assert "| broken | error | error | – | error | – |" in text
    assert "## Speed (raw)" in text and "## Quality (raw)" in text and "## Machine" in text
    assert "| cpu | test cpu |" in text
    assert "error: ConfigError: bad" in text
    assert "- a note" in text
    assert "| PPL at 1 s | PPL at 2 s |" in text
    assert "| 220.0 (2.20x floor) | 110.0 (1.10x floor) |" in text  # no validation figures: no checkpoint starred
    assert "## Recommendation" in text
    assert "| small | 500 | 2 s | at the budget | full (110.0 (1.10x floor)) | full (after 2.0 s) | – |" in text
    assert text.rstrip().endswith("| large | 500 | 2 s | at the budget | full (1,200.0) | full (after 2.0 s) | – |")
    assert f"`{reproduce_command(config)}`" in text


def test_a_budget_that_cannot_rank_says_why_and_names_no_winner(results, tmp_path):
    line = dict(results["recommendation"][0], ranked=False, verdict="full, hsm are within the seed spread")
    unranked = dict(results, recommendation=[line])
    text = write_markdown(unranked, BenchConfig.quick(), tmp_path / "report.md").read_text()
    assert "| cannot rank: full, hsm are within the seed spread | – | – |" in text
    assert recommendation_lines([line]) == [
        f"{line['dataset']} (V = 500), 1 s of training: cannot rank: full, hsm are within the seed spread"
    ]


def test_markdown_marks_the_checkpoint_kept_on_validation(results, tmp_path):
    """An overfitting layer: its 1 s checkpoint has the lowest validation perplexity, so the
    quality table stars it and the recommendation at 2 s quotes it, not the worse 2 s model."""
    overfits = quality_row("hsm", "brown", 300.0, None)
    overfits.curve[0].test_ppl, overfits.curve[0].valid_ppl, overfits.curve[1].valid_ppl = 150.0, 160.0, 310.0
    steady = quality_row("full", "brown", 200.0, None)
    steady.curve[0].valid_ppl, steady.curve[1].valid_ppl = 420.0, 210.0
    results["quality"] = [steady, overfits]
    results["recommendation"] = recommend(results["quality"])
    text = write_markdown(results, BenchConfig.quick(), tmp_path / "report.md").read_text()
    assert "| brown | hsm | 500 | (1,000) | 150.0* | 300.0 |" in text
    assert "| brown | full | 500 | (1,000) | 400.0 | 200.0* |" in text
    assert "| brown | 500 | 1 s | best validation checkpoint | hsm (150.0) | hsm (after 1.0 s) |" in text
    assert (
        "| brown | 500 | 2 s | best validation checkpoint | hsm (150.0, its 1 s checkpoint) | hsm (after 1.0 s) |"
        in text
    )


def test_reproduce_command_lists_only_what_differs_from_the_preset(tmp_path):
    assert reproduce_command(BenchConfig.quick()) == "bigvocab bench --quick --out bench-out"
    config = BenchConfig.full(outputs=["hsm*", "sampled"], seed=3, skip_quality=True, out=tmp_path)
    command = reproduce_command(config)
    assert command.startswith("bigvocab bench --full --outputs 'hsm*,sampled' --seed 3 --skip-quality")
    assert "--vocab-sizes" not in command


def test_plots_are_written(results, tmp_path):
    pytest.importorskip("matplotlib")
    paths, notes = write_plots(results, tmp_path)
    assert [p.name for p in paths] == ["speedup_vs_vocab.png", "perplexity_vs_time.png", "recommendation.png"]
    assert all(p.stat().st_size > 1000 for p in paths) and notes == []


def test_perplexity_plot_rings_the_kept_checkpoints_under_one_legend_entry(results, tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    for row in results["quality"][:3]:  # two corpora with validation; the failed row has no curve
        for point, valid in zip(row.curve, (100.0, 200.0)):
            point.valid_ppl = valid
    legends = []
    drawn = matplotlib.figure.Figure.legend
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "legend",
        lambda figure, handles, names, **kw: legends.append(list(names)) or drawn(figure, handles, names, **kw),
    )
    paths, _ = write_plots(results, tmp_path)
    assert paths[1].name == "perplexity_vs_time.png" and paths[1].stat().st_size > 1000
    assert legends == [["full", "hsm[huffman]", "lowest validation perplexity (kept)"]]


def test_the_recommendation_plot_names_the_best_layer_per_budget_or_that_it_cannot_rank(results, tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    texts: list[str] = []
    drawn = matplotlib.axes.Axes.annotate
    monkeypatch.setattr(
        matplotlib.axes.Axes, "annotate", lambda axes, text, *a, **kw: texts.append(text) or drawn(axes, text, *a, **kw)
    )
    lines = list(results["recommendation"])
    lines[0] = dict(lines[0], ranked=False, tied=["hsm[huffman]"], seed_spread=0.1)
    paths, _ = write_plots(dict(results, recommendation=lines), tmp_path)
    assert paths[-1].name == "recommendation.png" and paths[-1].stat().st_size > 1000
    drawn_last = texts[-len(lines) :]  # the recommendation plot is drawn last, one name per budget
    assert drawn_last == [f"cannot rank:\n{lines[0]['best']}\nhsm[huffman]"] + [line["best"] for line in lines[1:]]


def test_end_labels_that_would_overlap_are_spread_symmetrically_and_others_stay_put():
    """Curves ending at 1.40x (nce) and 1.41x (full), 1.29x and 1.29x (sampled, hsm) of the floor
    printed their labels over each other."""
    wanted = [0.50, 0.15, 0.10, 0.11, 0.12, 0.30]
    placed = spread_labels(wanted, gap=0.02)
    assert placed[0] == 0.50 and placed[5] == 0.30  # alone: where their curves end
    crowded = sorted(placed[1:5])
    assert all(b - a >= 0.02 - 1e-12 for a, b in zip(crowded, crowded[1:]))
    assert sum(placed[1:5]) / 4 == pytest.approx(sum(wanted[1:5]) / 4)  # centred on the crowd
    assert sorted(range(6), key=placed.__getitem__) == sorted(range(6), key=wanted.__getitem__)  # order kept


def test_a_spread_run_that_reaches_the_next_label_takes_it_in():
    placed = spread_labels([0.0, 0.0, 0.0, 0.035], gap=0.02)
    ordered = sorted(placed)
    assert all(b - a >= 0.02 - 1e-12 for a, b in zip(ordered, ordered[1:]))
    assert sum(placed) / 4 == pytest.approx(0.035 / 4)


def test_end_labels_stay_inside_the_bounds_in_order_and_apart():
    """The bench-full V = 10k panel: a dozen curves ended near the floor and their spread labels
    ran below the axes, over the tick labels."""
    wanted = [0.05, 0.0, 0.02, 0.01, 0.03, 0.9]
    placed = spread_labels(wanted, gap=0.1, bounds=(0.0, 1.0))
    assert min(placed) >= 0.0 and max(placed) <= 1.0
    ordered = sorted(placed)
    assert all(b - a >= 0.1 - 1e-12 for a, b in zip(ordered, ordered[1:]))
    assert sorted(range(6), key=placed.__getitem__) == sorted(range(6), key=wanted.__getitem__)
    assert placed[5] == 0.9  # clear of the crowd: where its curve ends


def test_more_end_labels_than_fit_share_the_height_evenly():
    placed = spread_labels([0.5] * 11, gap=0.2, bounds=(0.0, 1.0))
    assert sorted(placed) == pytest.approx([i / 10 for i in range(11)])


def test_time_axis_ticks_are_the_budgets_written_plainly():
    """--quick measures at 0.5, 1, 2 and 4 s: a tick format without decimals printed 0.5 as 0."""
    pytest.importorskip("matplotlib")
    from bigvocab.bench.harness.plots import _pyplot, _tick_at_budgets

    plt = _pyplot()
    figure, axes = plt.subplots()
    axes.set_xscale("log")
    _tick_at_budgets(axes, [0.5, 1.0, 2.0, 4.0])
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["0.5", "1", "2", "4"]
    plt.close(figure)


def test_plots_without_matplotlib_say_why(results, tmp_path, monkeypatch):
    monkeypatch.setattr("bigvocab.bench.harness.plots._pyplot", lambda: None)
    paths, notes = write_plots(results, tmp_path)
    assert paths == [] and "matplotlib is not installed" in notes[0]


@pytest.mark.parametrize(
    "value, text", [(None, "–"), (1.234, "1.23x"), (12.34, "12.3x"), (1234.5, "1234x"), (0.5, "0.50x")]
)
def test_speedup_format(value, text):
    assert fmt.speedup(value) == text


def test_vocab_format():
    assert [fmt.vocab(v) for v in (500, 2500, 10_000, 1_000_000)] == ["500", "2.5k", "10k", "1M"]


def test_a_diverged_curve_is_drawn_off_the_scale_not_flattening_the_rest():
    matplotlib = pytest.importorskip("matplotlib")
    from bigvocab.bench.harness.plots import _clip_top

    figure = matplotlib.figure.Figure()
    axes = figure.subplots()
    axes.set_yscale("log")
    axes.plot([1, 2, 3], [1.5, 2.0, 1e12])
    assert _clip_top(axes, [1.5, 2.0, 1e12]) == 2.0 and axes.get_ylim()[1] == 3.0
