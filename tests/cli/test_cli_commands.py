"""The command-line tool, run in-process through ``main([...])``: every command end to end on tiny
corpora, and every user error as one ``bigvocab: error:`` line, exit status 2, nothing written."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from bigvocab.checkpoint import load_model
from bigvocab.cli import main
from bigvocab.data.corpora import load_corpus
from bigvocab.evaluate import load_word2vec_format, perplexity

SPEC = "synthetic:vocab_size=200,num_classes=5,tokens=5000"
TINY_NNLM = [
    "--model",
    "nnlm",
    "--output",
    "full",
    "--context",
    "2",
    "--embedding-dim",
    "8",
    "--hidden-dim",
    "8",
    "--batch-size",
    "64",
    "--no-progress",
]


def run_ok(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def run_error(capsys, argv, match: str, status: int = 2, label: str = "error") -> str:
    code = main(argv)
    _out, err = capsys.readouterr()
    assert code == status
    assert err.startswith(f"bigvocab: {label}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert match in err, err
    return err


def snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.fixture
def text_file(tmp_path):
    """300 sentences of 8 words over 30 words."""
    rng = random.Random(0)
    words = [f"word{i}" for i in range(30)]
    path = tmp_path / "corpus.txt"
    path.write_text("".join(" ".join(rng.choice(words) for _ in range(8)) + "\n" for _ in range(300)))
    return path


@pytest.fixture(scope="module")
def nnlm_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "nnlm"
    torch.set_num_threads(1)
    assert main(["train", *TINY_NNLM, "--corpus", SPEC, "--epochs", "2", "--out", str(out)]) == 0
    return out


# ------------------------------------------------------------------------------ list and help
def test_list_shows_every_registry_and_corpus_form(capsys):
    out = run_ok(capsys, ["list"])
    for expected in (
        "output layers (--output):",
        "full",
        "scorers (--scorer):",
        "side inputs (--side):",
        "hsm trees (--tree):",
        "huffman",
        "samplers (--sampler):",
        "unigram",
        "models (--model):",
        "nnlm",
        "skipgram",
        "optimizers (--optimizer):",
        "sparse_adam",
        "lr schedules",
        "plateau",
        "brown-bengio:PATH",
        "synthetic[",
    ):
        assert expected in out
    # whole first paragraphs, no reStructuredText
    assert "``" not in out and ":class:" not in out and ":func:" not in out
    assert "cbow mean (not sum) of context" not in out
    assert "the target the centre word." in " ".join(out.split())


@pytest.mark.parametrize("command", ["list", "train", "eval", "export", "bench"])
def test_every_help_ends_with_examples(capsys, command):
    out = run_ok(capsys, [command, "--help"])
    tail = out[out.rindex("examples:") :]
    assert f"bigvocab {command}" in tail
    assert all(line.startswith("  ") for line in tail.strip().splitlines()[1:])


# ------------------------------------------------------------------------------ train, eval, export
def test_train_writes_summary_with_exact_test_perplexity(capsys, nnlm_run):
    summary = json.loads((nnlm_run / "summary.json").read_text())
    assert summary["model"] == "nnlm" and summary["epochs_completed"] == 2
    assert summary["checkpoint"] == str(nnlm_run / "best.pt")
    model, vocab, checkpoint = load_model(nnlm_run / "best.pt")
    assert checkpoint["meta"]["corpus"] == SPEC and checkpoint["meta"]["model_kwargs"]["context"] == 2
    corpus = load_corpus(SPEC, vocab=vocab, progress=False)
    expected = perplexity(model, corpus.test)
    assert summary["test_ppl"] == pytest.approx(expected, rel=1e-9)
    # a trained model beats the uniform guess V = 200 but not the source's floor
    assert summary["floor_ppl"] < summary["test_ppl"] < 200


def test_eval_prints_the_same_perplexity(capsys, nnlm_run):
    summary = json.loads((nnlm_run / "summary.json").read_text())
    out = run_ok(capsys, ["eval", "--checkpoint", str(nnlm_run / "best.pt"), "--no-progress"])
    assert out.startswith("test perplexity: ")
    assert float(out.split()[2]) == pytest.approx(summary["test_ppl"], abs=1e-3)


@pytest.mark.parametrize("binary", [False, True])
def test_export_writes_the_embedding(capsys, nnlm_run, tmp_path, binary):
    target = tmp_path / "vectors"
    run_ok(
        capsys,
        [
            "export",
            "--checkpoint",
            str(nnlm_run / "best.pt"),
            "--format",
            "word2vec",
            "--out",
            str(target),
            *(["--binary"] if binary else []),
        ],
    )
    model, vocab, _ = load_model(nnlm_run / "best.pt")
    vectors = load_word2vec_format(target, binary=binary)
    assert vectors.words == vocab.words
    assert torch.equal(vectors.vectors, model.word_vectors())
    run_error(capsys, ["export", "--checkpoint", str(nnlm_run / "best.pt"), "--out", str(target)], "--overwrite")


def test_resume_continues_and_refuses_run_options(capsys, tmp_path):
    out = tmp_path / "run"
    run_ok(capsys, ["train", *TINY_NNLM, "--corpus", SPEC, "--epochs", "1", "--out", str(out), "--patience", "0"])
    run_error(capsys, ["train", "--out", str(out), "--resume", "--lr", "0.5"], "--lr cannot change")
    run_ok(capsys, ["train", "--out", str(out), "--resume", "--epochs", "2", "--no-progress"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_completed"] == 2 and summary["steps"] == 2 * 79


def test_word2vec_model_with_analogy_and_similarity(capsys, tmp_path, text_file):
    out = tmp_path / "sg"
    run_ok(
        capsys,
        [
            "train",
            "--model",
            "skipgram",
            "--output",
            "neg",
            "--num-samples",
            "3",
            "--vector-size",
            "8",
            "--window",
            "2",
            "--corpus",
            f"text:{text_file}",
            "--epochs",
            "1",
            "--no-progress",
            "--batch-size",
            "128",
            "--no-skip-perplexity",
            "--out",
            str(out),
        ],
    )
    questions = tmp_path / "q.txt"
    questions.write_text(": s\nword1 word2 word3 word4\nword1 word2 word3 nope\n")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("word1\tword2\t3\nword3\tword4\t1\nword5\tword9\t2\nnope\tword1\t5\n")
    result = run_ok(
        capsys,
        [
            "eval",
            "--checkpoint",
            str(out / "best.pt"),
            "--no-progress",
            "--analogy",
            str(questions),
            "--similarity",
            str(pairs),
        ],
    )
    assert "test perplexity: " in result
    assert "(0/1;" in result or "(1/1;" in result
    assert "1 skipped" in result and "3 pairs, 1 skipped" in result


def test_model_without_output_layer(capsys, tmp_path):
    out = tmp_path / "cw"
    text = run_ok(
        capsys,
        [
            "train",
            "--model",
            "cw",
            "--window",
            "1",
            "--embedding-dim",
            "8",
            "--hidden-dim",
            "8",
            "--corpus",
            SPEC,
            "--epochs",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ],
    )
    assert "no perplexity" in text
    assert json.loads((out / "summary.json").read_text())["test_ppl"] is None
    assert "n/a" in run_ok(capsys, ["eval", "--checkpoint", str(out / "last.pt")])


# ------------------------------------------------------------------------------ errors
def test_negative_epochs(capsys, tmp_path):
    run_error(
        capsys,
        ["train", "--model", "nnlm", "--epochs", "-1", "--out", str(tmp_path / "x")],
        "argument --epochs: must be a positive integer, got '-1'",
    )
    assert not (tmp_path / "x").exists()


def test_unknown_names_suggest_the_closest(capsys, tmp_path):
    run_error(capsys, ["train", "--model", "nnln", "--out", str(tmp_path / "x")], "did you mean 'nnlm'")
    run_error(
        capsys, ["train", *TINY_NNLM, "--optimizer", "adamm", "--out", str(tmp_path / "x")], "did you mean 'adam'"
    )
    run_error(capsys, ["train", *TINY_NNLM, "--bptt", "5", "--corpus", SPEC, "--out", str(tmp_path / "x")], "bptt")
    run_error(capsys, ["frobnicate"], "invalid choice")
    assert not (tmp_path / "x").exists()


def test_empty_corpus_file(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    run_error(capsys, ["train", *TINY_NNLM, "--corpus", f"text:{empty}", "--out", str(tmp_path / "x")], "empty")
    assert not (tmp_path / "x").exists()


def test_every_word_unknown(capsys, tmp_path, text_file):
    run_error(
        capsys,
        ["train", *TINY_NNLM, "--corpus", f"text:{text_file}", "--min-count", "100000", "--out", str(tmp_path / "x")],
        "unknown",
    )
    assert not (tmp_path / "x").exists()
    out = tmp_path / "run"
    run_ok(capsys, ["train", *TINY_NNLM, "--corpus", f"text:{text_file}", "--epochs", "1", "--out", str(out)])
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("".join("alpha beta gamma delta\n" for _ in range(50)))
    run_error(capsys, ["eval", "--checkpoint", str(out / "best.pt"), "--corpus", f"text:{foreign}"], "unknown")


def test_nonexistent_paths(capsys, tmp_path):
    missing = tmp_path / "missing.txt"
    run_error(capsys, ["train", *TINY_NNLM, "--corpus", f"text:{missing}", "--out", str(tmp_path / "x")], str(missing))
    run_error(capsys, ["eval", "--checkpoint", str(tmp_path / "none.pt")], "does not exist")
    run_error(
        capsys, ["export", "--checkpoint", str(tmp_path / "none.pt"), "--out", str(tmp_path / "v")], "does not exist"
    )
    assert not (tmp_path / "x").exists() and not (tmp_path / "v").exists()


def test_corrupted_checkpoint(capsys, tmp_path, nnlm_run):
    broken = tmp_path / "broken.pt"
    broken.write_bytes((nnlm_run / "best.pt").read_bytes()[:2000])
    run_error(capsys, ["eval", "--checkpoint", str(broken)], "truncated or corrupt")
    run_error(capsys, ["export", "--checkpoint", str(broken), "--out", str(tmp_path / "v")], "truncated or corrupt")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "last.pt").write_bytes(b"garbage")
    run_error(capsys, ["train", "--out", str(run_dir), "--resume"], "truncated or corrupt")


def test_failed_commands_overwrite_nothing(capsys, tmp_path, nnlm_run):
    before = snapshot(nnlm_run)
    run_error(capsys, ["train", *TINY_NNLM, "--corpus", SPEC, "--out", str(nnlm_run)], "already holds a training run")
    run_error(
        capsys,
        ["train", *TINY_NNLM, "--corpus", f"text:{tmp_path / 'missing'}", "--out", str(nnlm_run), "--overwrite"],
        "missing",
    )
    run_error(
        capsys,
        ["train", *TINY_NNLM, "--corpus", SPEC, "--window", "3", "--out", str(nnlm_run), "--overwrite"],
        "window",
    )
    run_error(
        capsys, ["train", *TINY_NNLM, "--corpus", SPEC, "--lr", "0", "--out", str(nnlm_run), "--overwrite"], "--lr"
    )
    run_error(capsys, ["train", "--out", str(nnlm_run), "--resume", "--overwrite"], "not allowed with")
    assert snapshot(nnlm_run) == before


def test_interrupt_is_one_line(capsys, tmp_path, monkeypatch):
    from bigvocab.train import Trainer

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "fit", interrupted)
    run_error(
        capsys,
        ["train", *TINY_NNLM, "--corpus", SPEC, "--out", str(tmp_path / "x")],
        "SIGINT received",
        status=130,
        label="interrupted",  # asked for by the user: not an error
    )


def test_summary_perplexities_are_finite(nnlm_run):
    summary = json.loads((nnlm_run / "summary.json").read_text())
    assert math.isfinite(summary["test_ppl"]) and math.isfinite(summary["best_valid_ppl"])


def test_clustered_tree_from_a_checkpoints_vectors_is_stored_in_the_run(capsys, tmp_path, nnlm_run):
    """Mnih & Hinton's recipe: cluster the vectors of a first model into the tree of a second. The
    built tree travels in the checkpoint, so eval works without the vector file."""
    from bigvocab.outputs.trees import clustered_tree

    out = tmp_path / "clustered"
    hsm = [*TINY_NNLM[:3], "hsm", *TINY_NNLM[4:], "--tree", "clustered"]
    run_ok(
        capsys,
        [
            "train",
            *hsm,
            "--side",
            f"vectors={nnlm_run / 'best.pt'}",
            "--corpus",
            SPEC,
            "--epochs",
            "1",
            "--out",
            str(out),
        ],
    )
    model, _vocab, _ = load_model(out / "best.pt")
    first, _, _ = load_model(nnlm_run / "best.pt")
    assert model.output.tree == clustered_tree(first.word_vectors())
    assert "valid perplexity" in run_ok(
        capsys, ["eval", "--checkpoint", str(out / "best.pt"), "--split", "valid", "--no-progress"]
    )
    run_error(
        capsys,
        ["train", *hsm, "--corpus", SPEC, "--out", str(tmp_path / "x")],
        "reads vectors, which the corpus does not give: pass --side vectors=PATH",
    )
    run_error(
        capsys,
        [
            "train",
            *TINY_NNLM,
            "--side",
            f"vectors={nnlm_run / 'best.pt'}",
            "--corpus",
            SPEC,
            "--out",
            str(tmp_path / "y"),
        ],
        "does not read vectors (the layers that do: hsm[clustered])",
    )


def test_eval_reports_log_normaliser_statistics(capsys, nnlm_run):
    out = run_ok(capsys, ["eval", "--checkpoint", str(nnlm_run / "best.pt"), "--log-normaliser", "--no-progress"])
    assert "test log Z: mean " in out and "contexts)" in out
    run_error(
        capsys,
        ["eval", "--checkpoint", str(nnlm_run / "best.pt"), "--log-normaliser", "--skip-perplexity"],
        "drop --skip-perplexity",
    )


def test_eval_of_an_lstm_uses_the_runs_streams_and_reproduces_its_validation(capsys, tmp_path):
    """An LSTM's perplexity depends on how many streams the text is cut into (each starts from a
    zero state): eval defaults to the run's batch size, so it reproduces the run's validation."""
    out = tmp_path / "lstm"
    lstm = ["--model", "lstm", "--embedding-dim", "8", "--hidden-dim", "8", "--bptt", "5", "--batch-size", "4"]
    run_ok(capsys, ["train", *lstm, "--corpus", SPEC, "--epochs", "1", "--no-progress", "--out", str(out)])
    best = json.loads((out / "summary.json").read_text())["best_valid_ppl"]
    printed = run_ok(capsys, ["eval", "--checkpoint", str(out / "best.pt"), "--split", "valid", "--no-progress"])
    assert f"valid perplexity: {best:.3f}" in printed and "4 streams" in printed
