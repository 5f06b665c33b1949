"""``bigvocab train``'s model and output-layer flags are generated from what the registered classes
declare: a layer registered in a test becomes flags with its docstring's help, a flag whose name
is taken gets a prefix, every registered layer's and model's options are listed with help, and
``--resume`` refuses a generated flag that would change the stored run."""

from __future__ import annotations

import argparse

import pytest
import torch

from bigvocab.cli import MODEL_DEST, OUTPUT_DEST, build_parser, declared_values, main
from bigvocab.outputs.base import SIDE_INPUTS, OutputLayer
from bigvocab.registry import MODELS, OUTPUTS

SPEC = "synthetic:vocab_size=200,num_classes=5,tokens=5000"
TINY_NNLM = ["--model", "nnlm", "--context", "2", "--embedding-dim", "8", "--hidden-dim", "8", "--no-progress"]


class ThrowawaySoftmax(OutputLayer):
    """A softmax that exists for one test.

    Args:
        in_features: H.
        num_classes: V.
        sharpness: how far the logits are scaled before the softmax.
        num_samples: a throwaway k.
        epochs: an option named like a training flag.
        device: where the parameters are created (not a text value: no flag).
    """

    flag_aliases = {"sharpness": "keenness"}

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        sharpness: float = 2.0,
        num_samples: int | None = None,
        epochs: int = 1,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(in_features, num_classes)
        self.weight = torch.nn.Parameter(torch.zeros(num_classes, in_features, device=device))
        self.sharpness = sharpness

    def _log_softmax(self, hidden):
        return torch.log_softmax(self.sharpness * hidden @ self.weight.T, dim=1)


@pytest.fixture
def throwaway():
    OUTPUTS.register("throwaway")(ThrowawaySoftmax)
    try:
        yield "throwaway"
    finally:
        OUTPUTS.unregister("throwaway")


def train_parser() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["train"]


def flag_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """option string -> help of every flag of ``parser``."""
    return {option: action.help or "" for action in parser._actions for option in action.option_strings}


def test_a_registered_layers_options_become_flags_with_its_help(throwaway):
    helps = flag_helps(train_parser())
    assert helps["--sharpness"] == helps["--keenness"]
    assert "throwaway: how far the logits are scaled before the softmax (default 2.0)" in helps["--sharpness"]
    # a flag several layers take is one flag whose help says which layers take it
    assert "throwaway: a throwaway k" in helps["--num-samples"]
    assert "neg: k negatives" in helps["--num-samples"]
    # --epochs is the trainer's: the layer's option gets a prefixed flag
    assert "throwaway: an option named like a training flag" in helps["--output-epochs"]
    assert "throwaway" not in helps["--epochs"]
    assert "--device" in helps and "throwaway" not in helps["--device"]
    args = build_parser().parse_args(
        ["train", "--out", "x", "--output", throwaway, "--keenness", "3", "--output-epochs", "4", "--epochs", "5"]
    )
    assert declared_values(args, OUTPUT_DEST) == {"sharpness": 3.0, "epochs": 4}
    assert args.epochs == 5


def test_the_flags_of_a_layer_disappear_with_it(throwaway):
    assert "--sharpness" in flag_helps(train_parser())
    OUTPUTS.unregister(throwaway)
    try:
        assert "--sharpness" not in flag_helps(train_parser())
    finally:
        OUTPUTS.register(throwaway)(ThrowawaySoftmax)


def test_a_registered_layer_trains_from_its_flags(capsys, tmp_path, throwaway):
    argv = ["train", *TINY_NNLM, "--output", throwaway, "--sharpness", "0.5", "--corpus", SPEC, "--epochs", "1"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    from bigvocab.checkpoint import load_checkpoint

    assert load_checkpoint(tmp_path / "run" / "last.pt")["meta"]["output_kwargs"] == {"sharpness": 0.5}


def test_train_help_lists_every_layers_and_models_options_with_help(capsys):
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    helps = flag_helps(train_parser())
    owners = [(OUTPUTS, name, OUTPUTS.get(name).declared_options()) for name in OUTPUTS.names()]
    owners += [(MODELS, name, MODELS.get(name).declared_options()) for name in MODELS.names()]
    checked = 0
    for registry, name, options in owners:
        for option in options.values():
            if option.kind is None or (registry is OUTPUTS and option.name in SIDE_INPUTS):
                continue
            flag = "--" + option.name.replace("_", "-")
            prefixed = "--" + ("output" if registry is OUTPUTS else "model") + flag[1:]
            shown = flag if flag in text and name in helps.get(flag, "") else prefixed
            assert shown in text, f"{name}'s option {option.name} has no flag"
            assert option.help, f"{name}'s option {option.name} has no help in its docstring"
            assert name in helps[shown] and option.help.removesuffix(".")[:40] in helps[shown], (name, option)
            checked += 1
    assert checked > 60


def test_model_flags_keep_their_short_spellings():
    args = build_parser().parse_args(["train", "--out", "x", "--model", "lstm", "--layers", "1", "--no-tie"])
    assert declared_values(args, MODEL_DEST) == {"num_layers": 1, "tie_weights": False}
    args = build_parser().parse_args(["train", "--out", "x", "--model", "skipgram", "--negative", "3"])
    assert declared_values(args, OUTPUT_DEST) == {"num_samples": 3}


def test_resume_refuses_a_generated_flag_that_changes_the_run(capsys, tmp_path):
    out = tmp_path / "run"
    argv = ["train", *TINY_NNLM, "--output", "sampled", "--num-samples", "7", "--corpus", SPEC, "--epochs", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    capsys.readouterr()
    for given, refused in (
        (["--num-samples", "8"], "--num-samples cannot change"),
        (["--output-opt", "num_samples=8"], "--output-opt num_samples cannot change"),
        (["--hidden-dim", "9"], "--hidden-dim cannot change"),
        (["--sampler", "uniform"], "--sampler cannot change"),
    ):
        assert main(["train", "--out", str(out), "--resume", *given]) == 2
        assert refused in capsys.readouterr().err
    # the same values are accepted
    resumed = ["--resume", "--num-samples", "7", "--context", "2", "--epochs", "2", "--no-progress"]
    assert main(["train", "--out", str(out), *resumed]) == 0, capsys.readouterr().err
