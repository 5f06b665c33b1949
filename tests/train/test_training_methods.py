"""The optimisers AdamW, AdaMax, Nadam and AMSGrad, annealed gradient noise and curriculum
learning: each against the update rule or quantity it promises, and each resumed bit for bit."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from bigram_stub import BigramStub
from torch import nn

from bigvocab.errors import ConfigError
from bigvocab.train import TrainConfig, Trainer, build_optimizers
from bigvocab.train.curriculum import SEGMENT, Curriculum, split_units
from bigvocab.train.gradient_noise import add_gradient_noise, noise_std

QUIET = {"progress": False, "patience": None, "batch_size": 32}


def config(**kwargs) -> TrainConfig:
    return TrainConfig(**{**QUIET, **kwargs})


class Dense(nn.Linear):
    """A dense model for the optimiser checks (no sparse parameters)."""

    def sparse_parameters(self) -> list[nn.Parameter]:
        return []


# ------------------------------------------------------------------------------ optimisers
@pytest.mark.parametrize(
    "options, expected",
    [
        ({"optimizer": "adamw", "weight_decay": 0.01}, torch.optim.AdamW),
        ({"optimizer": "adamax"}, torch.optim.Adamax),
        ({"optimizer": "nadam"}, torch.optim.NAdam),
        ({"optimizer": "adam", "amsgrad": True}, torch.optim.Adam),
    ],
)
def test_each_optimiser_steps_as_torchs_own(options, expected):
    """Ten steps of the built optimiser on a dense model equal ten of torch's, element for element."""
    torch.manual_seed(0)
    model = Dense(5, 3).double()
    reference = Dense(5, 3).double()
    reference.load_state_dict(model.state_dict())
    cfg = config(lr=0.01, **options)
    (built,), _ = build_optimizers(model, cfg)
    assert type(built) is expected
    kwargs = {"lr": 0.01, "weight_decay": cfg.weight_decay}
    if expected in (torch.optim.Adam, torch.optim.AdamW):
        kwargs["amsgrad"] = cfg.amsgrad
    torch_optimizer = expected(reference.parameters(), **kwargs)
    data = torch.randn(10, 4, 5, dtype=torch.float64)
    for x in data:
        for net, optimizer in ((model, built), (reference, torch_optimizer)):
            optimizer.zero_grad()
            net(x).square().sum().backward()
            optimizer.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.equal(a, b)


def test_adamw_decay_is_decoupled_from_the_gradient():
    """With a zero gradient AdamW still shrinks the weights by lr x weight_decay per step
    (Loshchilov & Hutter 2019); Adam's L2 term would move them through the moments instead."""
    model = Dense(3, 1, bias=False).double()
    torch.nn.init.ones_(model.weight)
    (optimizer,), _ = build_optimizers(model, config(optimizer="adamw", lr=0.1, weight_decay=0.5))
    model.weight.grad = torch.zeros_like(model.weight)
    optimizer.step()
    assert torch.allclose(model.weight.detach(), torch.full((1, 3), 1 - 0.1 * 0.5, dtype=torch.float64))


@pytest.mark.parametrize("optimizer, sparse_kept", [("adamw", True), ("adamax", False), ("nadam", False)])
def test_sparse_rows_are_kept_or_the_warning_names_who_keeps_them(optimizer, sparse_kept):
    model = BigramStub()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizers, _ = build_optimizers(model, config(optimizer=optimizer, lr=0.01))
    kinds = {type(o) for o in optimizers}
    assert (torch.optim.SparseAdam in kinds) is sparse_kept
    if not sparse_kept:
        (warning,) = [w for w in caught if "sparse" in str(w.message)]
        assert f"optimizer {optimizer!r} does not support sparse gradients" in str(warning.message)
        assert "sgd, adagrad, adam, adamw" in str(warning.message)


def test_amsgrad_makes_sparse_rows_dense_and_says_so():
    with pytest.warns(UserWarning, match="optimizer 'adam' with amsgrad does not support sparse"):
        optimizers, _ = build_optimizers(BigramStub(), config(optimizer="adam", amsgrad=True, lr=0.01))
    assert all(type(o) is torch.optim.Adam for o in optimizers)


def test_unknown_optimiser_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'adamw'"):
        config(optimizer="adamww")


# ------------------------------------------------------------------------------ gradient noise
def test_noise_has_the_annealed_variance():
    """σ_t² = η / (1 + t)^0.55; over n = 200,000 elements the sample variance has relative standard
    error sqrt(2 / n) = 0.32%, so 5 standard errors is 1.6%."""
    eta, n = 0.3, 200_000
    for step in (0, 9, 999):
        param = nn.Parameter(torch.zeros(n, dtype=torch.float64))
        param.grad = torch.zeros(n, dtype=torch.float64)
        add_gradient_noise([param], eta, step, seed=0)
        expected = eta / (1 + step) ** 0.55
        assert noise_std(eta, step) ** 2 == pytest.approx(expected)
        assert float(param.grad.var()) == pytest.approx(expected, rel=5 * math.sqrt(2 / n))
        assert abs(float(param.grad.mean())) < 5 * math.sqrt(expected / n)


def test_noise_is_the_same_for_the_same_seed_and_step_and_only_on_stored_rows():
    first, second = (nn.Parameter(torch.zeros(4, 3)) for _ in range(2))
    for param in (first, second):
        param.grad = torch.zeros(4, 3)
        add_gradient_noise([param], 0.1, step=7, seed=3)
    assert torch.equal(first.grad, second.grad)
    other = nn.Parameter(torch.zeros(4, 3))
    other.grad = torch.zeros(4, 3)
    add_gradient_noise([other], 0.1, step=8, seed=3)
    assert not torch.equal(other.grad, first.grad)
    sparse = nn.Parameter(torch.zeros(10, 3))
    sparse.grad = torch.sparse_coo_tensor(torch.tensor([[2, 5]]), torch.zeros(2, 3), (10, 3))
    add_gradient_noise([sparse], 0.1, step=0, seed=0)
    dense = sparse.grad.to_dense()
    assert dense[[2, 5]].abs().sum() > 0 and dense[[0, 1, 3, 4, 6, 7, 8, 9]].abs().sum() == 0


def test_bad_noise_is_refused():
    with pytest.raises(ConfigError, match="gradient_noise must be a finite number >= 0"):
        config(gradient_noise=-1.0)


# ------------------------------------------------------------------------------ curriculum
def test_units_are_sentences_where_the_stream_marks_them_else_segments():
    ids = torch.tensor([5, 6, 0, 7, 0, 8, 9])  # 0 ends a sentence
    assert [u.tolist() for u in split_units(ids, 0)] == [[5, 6, 0], [7, 0], [8, 9]]
    long = torch.arange(2 * SEGMENT + 3)
    assert [u.numel() for u in split_units(long, None)] == [SEGMENT, SEGMENT, 3]


def test_frequency_curriculum_keeps_the_units_of_frequent_words_first_and_grows_to_all():
    # sentences ending in 0; the rarest word of each: 9, 3, 5, 2
    ids = torch.tensor([9, 1, 0, 3, 0, 5, 2, 0, 2, 1, 0])
    curriculum = Curriculum("frequency", 3, ids, sentence_end=0)  # 1/4, 2/4, 3/4 of the 4 sentences
    assert curriculum.epoch_ids(0).tolist() == [2, 1, 0]
    assert curriculum.epoch_ids(1).tolist() == [3, 0, 2, 1, 0]  # corpus order kept
    assert curriculum.epoch_ids(2).tolist() == [3, 0, 5, 2, 0, 2, 1, 0]
    assert torch.equal(curriculum.epoch_ids(3), ids) and torch.equal(curriculum.epoch_ids(10), ids)


def test_length_curriculum_needs_sentence_ends():
    ids = torch.tensor([4, 4, 4, 0, 4, 0])
    assert Curriculum("length", 1, ids, sentence_end=0).epoch_ids(0).tolist() == [4, 0]
    with pytest.raises(ConfigError, match="marks no sentence ends; use frequency"):
        Curriculum("length", 2, ids, sentence_end=None)


def test_a_curriculum_run_trains_shorter_first_epochs_and_counts_its_linear_schedule(corpus):
    torch.manual_seed(0)
    cfg = config(epochs=3, curriculum="frequency", curriculum_epochs=2, lr_schedule="linear", optimizer="adam", lr=0.01)
    trainer = Trainer(BigramStub(), *corpus, cfg)
    result = trainer.fit()
    steps = [h["steps"] for h in result["history"]]
    per_epoch = [steps[0], steps[1] - steps[0], steps[2] - steps[1]]
    assert per_epoch[0] < per_epoch[1] < per_epoch[2] == math.ceil((corpus[0].numel() - 1) / 32)
    assert trainer.schedule.total_steps == steps[-1]


# ------------------------------------------------------------------------------ resume
@pytest.mark.parametrize(
    "options",
    [
        {"optimizer": "adamw", "weight_decay": 0.01},
        {"optimizer": "nadam"},
        {"optimizer": "adam", "gradient_noise": 0.01},
        {"optimizer": "adam", "curriculum": "frequency", "curriculum_epochs": 2},
    ],
)
def test_resume_mid_epoch_is_bit_exact(options, corpus, tmp_path):
    cfg = dict(lr=0.02, epochs=3, lr_schedule="exponential", log_every=4, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        straight = BigramStub()
        Trainer(straight, *corpus, config(**cfg), out_dir=tmp_path / "a").fit()
        torch.manual_seed(0)
        Trainer(BigramStub(), *corpus, config(**cfg, max_steps=23), out_dir=tmp_path / "b").fit()
        torch.manual_seed(0)
        resumed = BigramStub()
        Trainer.resume(tmp_path / "b", resumed, *corpus, max_steps=None).fit()
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    assert (tmp_path / "a" / "metrics.jsonl").read_text().count("step") == (
        tmp_path / "b" / "metrics.jsonl"
    ).read_text().count("step")


# ------------------------------------------------------------------------------ model averaging
def test_model_averaging_in_one_process_is_refused(corpus):
    with pytest.raises(ConfigError, match="averages the models of several processes: run under torchrun"):
        Trainer(BigramStub(), *corpus, config(averaging="easgd"))


def test_unknown_model_averaging_names_the_closest():
    with pytest.raises(ConfigError, match="unknown model averaging 'easgdd'; did you mean 'easgd'"):
        config(averaging="easgdd")
