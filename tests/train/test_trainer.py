"""Trainer: configuration checks, optimisers with sparse gradients, schedules, exact resume,
early stopping, the NaN guard and the out_dir rules."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import warnings

import pytest
import torch
from bigram_stub import BigramStub

from bigvocab.checkpoint import load_checkpoint
from bigvocab.errors import ConfigError, DataError, NonFiniteError, RunLockedError, TrainingInterrupted
from bigvocab.registry import OPTIMIZERS
from bigvocab.train import TrainConfig, Trainer, build_optimizers, clip_grad_norm, make_schedule

QUIET = dict(progress=False, batch_size=32)


def config(**kwargs) -> TrainConfig:
    return TrainConfig(**{**QUIET, **kwargs})


# ------------------------------------------------------------------------------ configuration
@pytest.mark.parametrize(
    "bad",
    [
        {"epochs": 0},
        {"epochs": -1},
        {"batch_size": 0},
        {"batch_size": -3},
        {"lr": 0},
        {"lr": -0.1},
        {"lr": float("nan")},
        {"momentum": 1.0},
        {"lr_decay": 0},
        {"min_lr": 1.0},
        {"clip_norm": 0},
        {"patience": 0},
        {"max_steps": 0},
        {"log_every": 0},
        {"device": "gpu7"},
        {"weight_decay": -1},
    ],
)
def test_config_rejects_bad_values(bad):
    name = next(iter(bad))
    with pytest.raises(ConfigError, match=name.split("_")[0]):
        TrainConfig(**bad)


def test_unknown_optimizer_and_schedule_name_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'adam'"):
        TrainConfig(optimizer="adamm")
    with pytest.raises(ConfigError, match="did you mean 'plateau'"):
        TrainConfig(lr_schedule="plateu")


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ConfigError, match="unknown training option"):
        TrainConfig.from_dict({"epochs": 2, "epoch": 3})


def test_plateau_needs_validation_data(make_model, corpus):
    with pytest.raises(ConfigError, match="plateau"):
        Trainer(make_model(), corpus[0], None, config())


def test_too_short_training_ids_is_a_data_error(make_model):
    trainer = Trainer(make_model(), torch.tensor([3]), None, config(lr_schedule="none"))
    with pytest.raises(DataError, match="no batch"):
        trainer.fit()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_a_config_error(make_model, corpus):
    with pytest.raises(ConfigError, match="CUDA"):
        Trainer(make_model(), *corpus, config(device="cuda"))


# ------------------------------------------------------------------------------ optimisers
LEARNING_RATES = {
    "sgd": 1.0,
    "momentum": 0.2,
    "nesterov": 0.2,
    "adagrad": 0.5,
    "adadelta": 5.0,
    "rmsprop": 0.01,
    "adam": 0.03,
    "adamw": 0.03,
    "adamax": 0.03,
    "nadam": 0.03,
    "sparse_adam": 0.03,
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_learns_with_sparse_embeddings(name, make_model, corpus):
    model = make_model(sparse=True, dropout=0.0)
    train, valid = corpus
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = Trainer(model, train, valid, config(optimizer=name, lr=LEARNING_RATES[name], epochs=4))
    before = trainer.evaluate(valid)
    result = trainer.fit()
    # A uniform guess scores V = 12; the source's rows are peaked, so learning shows as a drop
    # far larger than the noise of 200 validation tokens.
    assert before > 9
    assert result["best_valid_ppl"] < 0.75 * before


def test_sparse_params_get_sparse_capable_optimizers(make_model):
    model = make_model(sparse=True)
    kinds = lambda name: [type(o).__name__ for o in build_optimizers(model, config(optimizer=name))[0]]
    assert kinds("adam") == ["Adam", "SparseAdam"]
    assert kinds("sparse_adam") == ["Adam", "SparseAdam"]
    assert kinds("adagrad") == ["Adagrad", "Adagrad"]
    assert kinds("sgd") == ["SGD", "SGD"]
    for name in ("momentum", "nesterov", "rmsprop", "adadelta"):
        with pytest.warns(UserWarning, match="made dense"):
            optimizers, dense = build_optimizers(model, config(optimizer=name))
        assert len(optimizers) == 1 and any(p is model.embedding.weight for p in dense)
    with pytest.warns(UserWarning, match="weight decay"):
        build_optimizers(model, config(optimizer="sgd", weight_decay=1e-4))


def test_sparse_adagrad_step_prints_no_torch_invariant_warning():
    """torch warns once per process, so a fresh process takes the step; the previous commit's
    plain torch Adagrad printed "Sparse invariant checks are implicitly disabled" here."""
    script = (
        "import torch\n"
        "from bigvocab.train import TrainConfig, build_optimizers\n"
        "model = torch.nn.Embedding(10, 3, sparse=True)\n"
        "model.sparse_parameters = lambda: [model.weight]\n"
        "(optimizer,), _ = build_optimizers(model, TrainConfig(optimizer='adagrad', progress=False))\n"
        "before = model.weight.detach().clone()\n"
        "model(torch.tensor([1, 2, 1])).sum().backward()\n"
        "optimizer.step()\n"
        "changed = (model.weight.detach() != before).any(dim=1).nonzero().flatten().tolist()\n"
        "assert changed == [1, 2], changed\n"
        "assert not torch.sparse.check_sparse_tensor_invariants.is_enabled()\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    assert "Sparse invariant" not in result.stderr


@pytest.mark.parametrize("name", ["sgd", "adagrad", "momentum", "rmsprop"])
def test_sparse_updates_equal_dense_updates(name, make_model, corpus):
    """SGD and Adagrad leave untouched rows unchanged in both forms; momentum and RMSprop are
    densified, so a sparse-gradient model must follow the dense one step for step."""
    dense = make_model(sparse=False, dropout=0.0)
    sparse = make_model(sparse=True, dropout=0.0)
    sparse.load_state_dict(dense.state_dict())
    train, valid = corpus
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model in (dense, sparse):
            Trainer(model, train, valid, config(optimizer=name, lr=0.05, epochs=1, clip_norm=0.5)).fit()
    for key, value in dense.state_dict().items():
        torch.testing.assert_close(sparse.state_dict()[key], value, rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_coalesces_sparse_gradients():
    """Row 1 appears twice in the uncoalesced gradient: its norm is that of the summed row."""
    dense_param = torch.nn.Parameter(torch.zeros(5, 3))
    sparse_param = torch.nn.Parameter(torch.zeros(5, 3))
    values = torch.tensor([[1.0, 2.0, 2.0], [3.0, 0.0, 4.0], [1.0, 1.0, 1.0]])
    indices = torch.tensor([[1, 3, 1]])
    sparse_param.grad = torch.sparse_coo_tensor(indices, values, (5, 3))
    dense_param.grad = sparse_param.grad.to_dense()
    other_sparse, other_dense = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    other_sparse.grad = torch.tensor([2.0, -1.0])
    other_dense.grad = other_sparse.grad.clone()
    expected = torch.nn.utils.clip_grad_norm_([dense_param, other_dense], 1.5)
    norm = clip_grad_norm([sparse_param, other_sparse], 1.5)
    assert norm == pytest.approx(float(expected), rel=1e-6)
    torch.testing.assert_close(sparse_param.grad.to_dense(), dense_param.grad)
    torch.testing.assert_close(other_sparse.grad, other_dense.grad)


def test_clip_grad_norm_uses_a_gradient_with_distinct_sorted_rows_as_it_is():
    """A sampling layer's gradient lists each row once, in order, but unmarked: clipping scales its
    values in place instead of replacing it by a coalesced copy, with the same result."""
    values = torch.tensor([[1.0, 2.0, 2.0], [3.0, 0.0, 4.0]])
    param = torch.nn.Parameter(torch.zeros(5, 3))
    grad = torch.sparse_coo_tensor(torch.tensor([[1, 3]]), values.clone(), (5, 3))
    assert not grad.is_coalesced()
    param.grad = grad
    reference = torch.nn.Parameter(torch.zeros(5, 3))
    reference.grad = grad.to_dense()
    expected = torch.nn.utils.clip_grad_norm_([reference], 1.5)
    assert clip_grad_norm([param], 1.5) == pytest.approx(float(expected), rel=1e-6)
    assert param.grad is grad  # not coalesced into a copy
    torch.testing.assert_close(param.grad.to_dense(), reference.grad)


# ------------------------------------------------------------------------------ schedules
def test_linear_schedule_goes_from_lr_to_min_lr():
    schedule = make_schedule("linear", 0.1, decay=0.5, min_lr=0.001, total_steps=100)
    assert schedule.at_step(0) == pytest.approx(0.1)
    assert schedule.at_step(50) == pytest.approx(0.0505)
    assert schedule.at_step(100) == pytest.approx(0.001)
    assert schedule.at_step(150) == pytest.approx(0.001)
    assert schedule.end_of_epoch(False) == pytest.approx(0.001)


def test_exponential_and_plateau_schedules():
    exponential = make_schedule("exponential", 0.1, decay=0.5, min_lr=0.02)
    assert [exponential.end_of_epoch(True) for _ in range(3)] == pytest.approx([0.05, 0.025, 0.02])
    plateau = make_schedule("plateau", 0.1, decay=0.5, min_lr=0.0)
    assert [plateau.end_of_epoch(improved) for improved in (True, False, True, False)] == pytest.approx(
        [0.1, 0.05, 0.05, 0.025]
    )
    assert make_schedule("none", 0.1, decay=0.5, min_lr=0.0).end_of_epoch(False) == 0.1


def test_linear_schedule_in_a_run_ends_at_min_lr(make_model, corpus, tmp_path):
    cfg = config(lr_schedule="linear", lr=0.2, min_lr=0.002, epochs=2, log_every=1)
    Trainer(make_model(), *corpus, cfg, out_dir=tmp_path).fit()
    events = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    rates = [e["lr"] for e in events if e["event"] == "step"]
    steps_per_epoch = math.ceil(599 / 32)
    assert len(rates) == 2 * steps_per_epoch
    assert rates[0] == pytest.approx(0.2)
    assert all(a > b for a, b in zip(rates, rates[1:]))
    # the last step is step total-1 of total: one step short of min_lr
    assert rates[-1] == pytest.approx(0.2 - (0.2 - 0.002) * (len(rates) - 1) / len(rates))


def scripted_perplexities(monkeypatch, values):
    sequence = iter(values)
    monkeypatch.setattr(Trainer, "evaluate", lambda self, ids: next(sequence))


def test_plateau_decays_when_valid_does_not_improve(make_model, corpus, monkeypatch):
    scripted_perplexities(monkeypatch, [10.0, 9.0, 9.5, 8.0, 8.5])
    result = Trainer(make_model(), *corpus, config(epochs=5, lr=0.1, patience=None)).fit()
    assert [h["lr"] for h in result["history"]] == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05])
    assert result["lr"] == pytest.approx(0.025)


def test_early_stopping_after_patience_epochs(make_model, corpus, monkeypatch, tmp_path):
    scripted_perplexities(monkeypatch, [10.0, 9.0, 9.5, 9.1, 9.2, 8.0])
    result = Trainer(make_model(), *corpus, config(epochs=6, patience=2), out_dir=tmp_path).fit()
    assert result["stopped_early"] and result["epochs_completed"] == 4
    assert result["best_epoch"] == 2 and result["best_valid_ppl"] == 9.0
    assert load_checkpoint(tmp_path / "best.pt")["position"]["epoch"] == 2
    assert load_checkpoint(tmp_path / "last.pt")["position"]["epoch"] == 4


# ------------------------------------------------------------------------------ exact resume
def assert_same_state(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for key, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[key]), key


@pytest.mark.parametrize("optimizer", ["adam", "momentum"])
def test_resume_at_epoch_boundary_is_bit_exact(optimizer, make_model, corpus, tmp_path):
    cfg = dict(optimizer=optimizer, lr=0.05, lr_schedule="plateau", lr_decay=0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        straight = make_model()
        full = Trainer(straight, *corpus, config(epochs=3, **cfg), out_dir=tmp_path / "a").fit()
        Trainer(make_model(), *corpus, config(epochs=2, **cfg), out_dir=tmp_path / "b").fit()
        resumed = make_model()
        result = Trainer.resume(tmp_path / "b", resumed, *corpus, epochs=3).fit()
    assert_same_state(straight, resumed)
    assert [h["valid_ppl"] for h in result["history"]] == [h["valid_ppl"] for h in full["history"]]
    assert result["steps"] == full["steps"] and result["tokens"] == full["tokens"]


def test_resume_mid_epoch_is_bit_exact(make_model, corpus, tmp_path):
    cfg = dict(optimizer="adam", lr=0.05, epochs=2, lr_schedule="exponential", log_every=5)
    straight = make_model()
    Trainer(straight, *corpus, config(**cfg), out_dir=tmp_path / "a").fit()
    stopped = Trainer(make_model(), *corpus, config(**cfg, max_steps=23), out_dir=tmp_path / "b").fit()
    assert stopped["steps"] == 23 and stopped["epochs_completed"] == 1
    resumed = make_model()
    Trainer.resume(tmp_path / "b", resumed, *corpus, max_steps=None).fit()
    assert_same_state(straight, resumed)

    # events logged after the checkpoint were dropped, so the log matches the straight run's
    def steps(run):
        lines = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        return [(e["event"], e["step"]) for e in map(json.loads, lines)]

    assert steps("b") == steps("a")


def test_checkpoint_every_writes_mid_epoch_position(make_model, corpus, tmp_path):
    Trainer(make_model(), *corpus, config(epochs=1, checkpoint_every=4, max_steps=6), out_dir=tmp_path).fit()
    # the run stopped at step 6 (max_steps) after a periodic save at step 4
    position = load_checkpoint(tmp_path / "last.pt")["position"]
    assert position["step"] == 6 and position["step_in_epoch"] == 6 and position["epoch"] == 0


def test_resume_refuses_changes_that_define_the_run(make_model, corpus, tmp_path):
    Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path).fit()
    with pytest.raises(ConfigError, match="cannot change lr"):
        Trainer.resume(tmp_path, make_model(), *corpus, lr=0.5)
    with pytest.raises(ConfigError, match="nothing to resume"):
        Trainer.resume(tmp_path / "empty", make_model(), *corpus)


# ------------------------------------------------------------------------------ NaN guard
def test_non_finite_loss_names_the_step_and_keeps_the_good_checkpoint(make_model, corpus, tmp_path):
    model = make_model()
    trainer = Trainer(model, *corpus, config(epochs=3), out_dir=tmp_path)
    steps_per_epoch = math.ceil(599 / 32)
    model.nan_from_call = steps_per_epoch + 3  # third step of epoch 2
    with pytest.raises(NonFiniteError) as caught:
        trainer.fit()
    message = str(caught.value)
    assert f"epoch 2 step {steps_per_epoch + 3} " in message
    assert "batch starting at token" in message
    assert str(tmp_path / "last.pt") in message
    saved = load_checkpoint(tmp_path / "last.pt")
    assert saved["position"]["epoch"] == 1 and saved["position"]["step_in_epoch"] == 0
    assert all(torch.isfinite(v).all() for v in saved["model"].values())


def test_non_finite_loss_before_any_checkpoint(make_model, corpus):
    model = make_model()
    model.nan_from_call = 1
    with pytest.raises(NonFiniteError, match="epoch 1 step 1 .*none written yet"):
        Trainer(model, *corpus, config()).fit()


# ------------------------------------------------------------------------------ out_dir and files
def test_out_dir_with_a_run_is_refused_unless_overwrite(make_model, corpus, tmp_path):
    Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path).fit()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError, match="already holds a training run"):
        Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    Trainer(make_model(), *corpus, config(epochs=2), out_dir=tmp_path, overwrite=True).fit()
    assert load_checkpoint(tmp_path / "last.pt")["position"]["epoch"] == 2
    assert json.loads((tmp_path / "config.json").read_text())["epochs"] == 2


def test_metrics_log_and_checkpoint_contents(make_model, corpus, tmp_path):
    meta = {"model": "stub", "vocab": {"words": ["a", "b"]}}
    result = Trainer(make_model(), *corpus, config(epochs=2, log_every=5), out_dir=tmp_path, meta=meta).fit()
    events = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    epochs = [e for e in events if e["event"] == "epoch"]
    assert [e["step"] for e in steps] == list(range(5, result["steps"] + 1, 5))
    for event in steps:
        assert {"epoch", "step", "tokens", "loss", "lr", "tokens_per_s", "elapsed"} <= set(event)
        assert event["tokens_per_s"] > 0 and math.isfinite(event["loss"])
    assert [e["valid_ppl"] for e in epochs] == [h["valid_ppl"] for h in result["history"]]
    assert all(e["tokens_per_s"] > 0 for e in epochs)
    assert epochs[-1]["tokens"] == 2 * 599
    checkpoint = load_checkpoint(tmp_path / "best.pt")
    assert checkpoint["meta"] == meta
    assert checkpoint["config"]["epochs"] == 2
    assert {"torch", "numpy", "python"} <= set(checkpoint["rng"])
    assert result["best_path"] == tmp_path / "best.pt"


def test_evaluate_matches_best_checkpoint(make_model, corpus, tmp_path):
    trainer = Trainer(make_model(), *corpus, config(epochs=2), out_dir=tmp_path)
    result = trainer.fit()
    fresh = BigramStub()
    fresh.load_state_dict(load_checkpoint(tmp_path / "best.pt")["model"])
    trainer.model = fresh
    assert trainer.evaluate(corpus[1]) == pytest.approx(result["best_valid_ppl"], rel=1e-12)


def test_max_steps_on_an_epoch_boundary_completes_the_epoch(make_model, corpus, tmp_path):
    steps_per_epoch = math.ceil(599 / 32)
    result = Trainer(make_model(), *corpus, config(epochs=3, max_steps=steps_per_epoch), out_dir=tmp_path).fit()
    assert result["epochs_completed"] == 1 and len(result["history"]) == 1
    assert result["best_path"] == tmp_path / "best.pt"
    assert load_checkpoint(tmp_path / "last.pt")["position"]["step_in_epoch"] == 0


# ------------------------------------------------------------------------------ signals and the lock
@pytest.fixture
def default_sigint():
    """A shell runs background jobs with SIGINT ignored, and the trainer leaves an ignored signal
    ignored: restore the default a terminal user has for the test's duration."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.usefixtures("default_sigint")
def test_signal_finishes_the_step_saves_and_resume_is_exact(number, make_model, corpus, tmp_path):
    """The model sends the signal to its own process in the middle of step 7's loss."""
    cfg = dict(optimizer="adam", lr=0.05, epochs=2, lr_schedule="exponential", log_every=1)
    straight = make_model()
    Trainer(straight, *corpus, config(**cfg), out_dir=tmp_path / "a").fit()
    model = make_model()
    original_loss = model.loss

    def loss_that_signals(batch):
        model.calls_seen = getattr(model, "calls_seen", 0) + 1
        if model.calls_seen == 7:
            os.kill(os.getpid(), number)
        return original_loss(batch)

    model.loss = loss_that_signals
    with pytest.raises(
        TrainingInterrupted,
        match=f"{signal.Signals(number).name} received: stopped after step 7 "
        r"\(step 7 of 19 in epoch 1\) and saved",
    ) as caught:
        Trainer(model, *corpus, config(**cfg), out_dir=tmp_path / "b").fit()
    assert caught.value.step == 7 and caught.value.checkpoint == tmp_path / "b" / "last.pt"
    assert load_checkpoint(tmp_path / "b" / "last.pt")["position"]["step"] == 7
    assert signal.getsignal(number) is not None and not (tmp_path / "b" / ".lock").exists()
    resumed = make_model()
    Trainer.resume(tmp_path / "b", resumed, *corpus).fit()
    assert_same_state(straight, resumed)
    lines = lambda run: [(e["step"], e["loss"]) for e in map(json.loads, (tmp_path / run / "metrics.jsonl").open())]
    assert lines("b") == lines("a")


def test_a_run_directory_in_use_is_refused(make_model, corpus, tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from bigvocab.train.rundir import RunLock\n"
            "with RunLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunLockedError, match=f"out_dir '{tmp_path}' is in use by another run \\(pid {holder.pid} "):
            Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path).fit()
    finally:
        holder.kill()
        holder.wait()
    Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path).fit()  # the dead holder's lock is stale
    assert (tmp_path / "last.pt").exists() and not (tmp_path / ".lock").exists()


def test_python_messages_name_keyword_arguments(make_model, corpus, tmp_path):
    Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path).fit()
    with pytest.raises(ConfigError) as caught:
        Trainer(make_model(), *corpus, config(epochs=1), out_dir=tmp_path)
    assert "resume=True" in str(caught.value) and "overwrite=True" in str(caught.value)
    assert "--" not in str(caught.value)
