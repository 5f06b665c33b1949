"""What a class declares about its options, read from its signature, type hints, ``Args:``
section and ``#:`` comments (bigvocab.declarations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from bigvocab.declarations import args_section, constructor_options, dataclass_options, merged_help, text_kind


class Base:
    """A base.

    Args:
        size: how big, in ``units`` (see :class:`~a.b.Unit`); up to 2**24
            of them.
        shape, depth: the shape's.
        **extra: passed on.

    Returns:
        nothing to see here.
    """

    def __init__(self, *, size: int = 3, shape: str = "round", depth: int | None = None, **extra) -> None:
        pass


class Child(Base):
    """A child.

    Args (its own):
        size: as for :class:`Base`.
        cutoffs: where the bands start.
        device: where.
    """

    def __init__(self, *, size: int = 5, cutoffs: Sequence[int] | None = None, device: torch.device | None = None):
        super().__init__(size=size)


def test_args_section_reads_each_keyword_and_shared_entries():
    assert args_section(Base.__doc__) == {
        "size": "how big, in units (see Unit); up to 2**24 of them.",
        "shape": "the shape's.",
        "depth": "the shape's.",
    }
    assert args_section("No arguments here.") == {}


def test_constructor_options_take_defaults_from_the_first_source_and_help_past_cross_references():
    options = constructor_options({"size", "cutoffs", "device", "shape", "depth"}, [Child, Base])
    assert list(options) == ["size", "cutoffs", "device", "shape", "depth"]
    assert options["size"].default == 5 and options["size"].help.startswith("how big")
    assert options["cutoffs"].kind is list and options["device"].kind is None
    assert options["depth"].kind is int and options["depth"].default is None
    assert options["shape"].help_with_default() == "the shape's (default round)."
    assert options["depth"].help_with_default() == "the shape's."


def test_text_kinds_of_type_hints():
    assert [text_kind(t) for t in (bool, int, float, str)] == [bool, int, float, str]
    assert text_kind(int | None) is int and text_kind(str | torch.Tensor | None) is str
    assert text_kind(Sequence[int]) is list and text_kind(list[float]) is None
    assert text_kind(int | float) is float and text_kind(int | str) is object
    assert text_kind(torch.Tensor | None) is None


@dataclass
class Config:
    """Options."""

    #: the first one,
    #: over two lines.
    first: int = 1
    second: str = "x"  # a trailing comment is not help
    #: a list.
    third: list = field(default_factory=list)


@dataclass
class MoreConfig(Config):
    #: the fifth.
    fifth: bool = True


def test_dataclass_options_read_the_comment_above_each_field_in_its_own_class():
    options = dataclass_options(MoreConfig)
    assert {name: option.help for name, option in options.items()} == {
        "first": "the first one, over two lines.",
        "second": "",
        "third": "a list.",
        "fifth": "the fifth.",
    }
    assert options["first"].kind is int and options["fifth"].kind is bool and options["third"].default == []


def test_merged_help_groups_the_owners_that_say_the_same():
    assert merged_help({"a": "one.", "b": "one", "c": "two."}) == "a, b: one; c: two"
    assert merged_help({"a": ""}) == "a"
