"""What a class declares about its options -- each option's name, the kind of value it takes,
its default and its help -- read from what its author writes anyway: the keyword arguments of a
constructor, their type hints and the ``Args:`` section of the class docstring, or the fields of
a config dataclass and the ``#:`` comment above each.

``bigvocab train`` builds its layer and model flags from these records, so an option added to a
layer's constructor or to a model's config is a command-line flag with help, with no other edit.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bigvocab.registry import plain_summary

#: The default of an option that has none (it must be given).
REQUIRED = inspect.Parameter.empty

#: Kinds of value an option can take as text: each is how the command line parses it. ``list`` is a
#: comma-separated list of integers; ``object`` a value of mixed types (an int, a float, a boolean,
#: a list or a string, as written).
TEXT_KINDS = (bool, int, float, str, list, object)


@dataclass(frozen=True)
class Option:
    """One keyword option of a class.

    Attributes:
        name: the keyword.
        kind: one of :data:`TEXT_KINDS`, the kind of value its type hint allows as text; None when
            no value written as text fits it (a tensor, a device, a built object).
        default: the default value, or :data:`REQUIRED`.
        help: what it does, one line without markup (empty when the class does not say).
    """

    name: str
    kind: type | None
    default: Any
    help: str

    def help_with_default(self) -> str:
        """``help``, followed by ``(default X)`` unless it states its default already or has none."""
        if self.default is None or self.default is REQUIRED or "default" in self.help.lower():
            return self.help
        if not self.help:
            return f"default {self.default}"
        text, stop = (self.help[:-1], ".") if self.help.endswith(".") else (self.help, "")
        return f"{text} (default {self.default}){stop}"


def text_kind(annotation: Any) -> type | None:
    """The kind of text value (:data:`TEXT_KINDS`) a resolved type hint accepts: ``bool``,
    ``int``, ``float`` or ``str`` for those types (``X | None`` and unions with types that no text
    gives, such as ``str | Tree``, read as the text type), ``list`` for a sequence of ints,
    ``object`` for a union of several text types, None when no text fits."""
    members = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    kinds = {kind for kind in map(_member_kind, members) if kind is not None}
    if kinds == {int, float}:
        return float
    if len(kinds) > 1:
        return object
    return kinds.pop() if kinds else None


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Union or isinstance(annotation, types.UnionType)


def _member_kind(annotation: Any) -> type | None:
    if annotation in (bool, int, float, str):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Sequence) or (isinstance(origin, type) and issubclass(origin, Sequence)):
        items = [item for item in typing.get_args(annotation) if item is not Ellipsis]
        if items and all(item is int for item in items):
            return list
    return None


def args_section(docstring: str | None) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring: keyword -> its description on one line,
    without reStructuredText markup. An entry that describes several keywords (``device, dtype:
    ...``) gives each of them its text; ``**kwargs`` entries are left out."""
    lines = inspect.cleandoc(docstring or "").splitlines()
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"Args\b[^:]*:", line.strip())), None)
    if start is None:
        return {}
    entries: dict[str, list[str]] = {}
    indent, current = None, None
    for line in lines[start + 1 :]:
        depth = len(line) - len(line.lstrip())
        if not line.strip() or (indent is not None and depth < indent):
            break
        if indent is None:
            indent = depth
        entry = re.fullmatch(r"(\*{0,2}\w+(?:,\s*\*{0,2}\w+)*):(.*)", line.strip()) if depth == indent else None
        if entry is not None:
            current = [entry.group(2).strip()]
            for name in re.split(r",\s*", entry.group(1)):
                if not name.startswith("*"):
                    entries.setdefault(name, current)
        elif current is not None:
            current.append(line.strip())
    return {name: plain_summary(" ".join(text)) for name, text in entries.items()}


def is_cross_reference(text: str) -> bool:
    """Whether an ``Args`` entry only sends the reader elsewhere (``as for ``full``.``), so that
    the description is to be found in another class."""
    return text.lower().startswith("as for")


def constructor_options(names: Iterable[str], sources: Sequence[Callable[..., Any]]) -> dict[str, Option]:
    """The keyword options ``names`` as declared by ``sources``: classes (their ``__init__`` and
    class docstring) or functions, searched in order. An option's default and type hint come from
    the first source whose signature names it with a default (else the first that names it), its
    help from the first ``Args`` entry for it that is not a cross-reference. Options come in the
    order the sources' signatures name them; a name that no signature names is left out."""
    wanted = set(names)
    found: dict[str, Option] = {}
    helps = [args_section(source.__doc__) for source in sources]
    for source in sources:
        function = source.__init__ if isinstance(source, type) else source  # type: ignore[misc]
        hints = typing.get_type_hints(function)
        for parameter in inspect.signature(function).parameters.values():
            name = parameter.name
            if name not in wanted or parameter.kind not in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                continue
            known = found.get(name)
            if known is not None and known.default is not REQUIRED:
                continue
            text = next((h[name] for h in helps if name in h and not is_cross_reference(h[name])), "")
            found[name] = Option(name, text_kind(hints.get(name, Any)), parameter.default, text)
    return found


def dataclass_options(config_class: type) -> dict[str, Option]:
    """The fields of the dataclass ``config_class`` as options: type hint, default, and the ``#:``
    comment lines just above the field (in the class, or the base class, that defines it)."""
    hints = typing.get_type_hints(config_class)
    comments: dict[str, str] = {}
    for owner in config_class.__mro__:
        if dataclasses.is_dataclass(owner):
            for name, text in _field_comments(owner).items():
                comments.setdefault(name, text)
    options = {}
    for field in dataclasses.fields(config_class):
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = REQUIRED
        options[field.name] = Option(
            field.name, text_kind(hints.get(field.name, Any)), default, comments.get(field.name, "")
        )
    return options


def _field_comments(owner: type) -> dict[str, str]:
    """name -> the ``#:`` comment block right above ``name: ...`` in the body of ``owner``."""
    comments: dict[str, str] = {}
    block: list[str] = []
    for line in _class_body(owner):
        stripped = line.strip()
        if stripped.startswith("#:"):
            block.append(stripped[2:].strip())
            continue
        field = re.match(r"(\w+)\s*:", stripped)
        if field is not None and block:
            comments[field.group(1)] = plain_summary(" ".join(block))
        block = []
    return comments


def _class_body(owner: type) -> list[str]:
    """The source lines of the class statement of ``owner`` (found by name in its module's file,
    which :func:`inspect.getsource` would parse whole); none when the source is not at hand."""
    try:
        path = inspect.getsourcefile(owner)
    except TypeError:
        return []
    lines = linecache.getlines(path) if path else []
    header = re.compile(rf"(\s*)class {re.escape(owner.__name__)}\b")
    for start, line in enumerate(lines):
        match = header.match(line)
        if match is None:
            continue
        indent = len(match.group(1))
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        return lines[start:end]
    return []


def merged_help(helps: Mapping[str, str]) -> str:
    """One help line for an option that several classes take, saying which take it: ``owners:
    text`` for each distinct text, the owners that say the same thing grouped (``nnlm, lstm: ...;
    cw: ...``)."""
    by_text: dict[str, list[str]] = {}
    for owner, text in helps.items():
        by_text.setdefault(text.removesuffix("."), []).append(owner)
    return "; ".join(f"{', '.join(owners)}: {text}".rstrip(": ") for text, owners in by_text.items())
