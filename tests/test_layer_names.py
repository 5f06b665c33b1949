"""Nothing outside ``outputs/`` and ``models/`` names a particular output layer: what the rest of
the package needs from a layer it reads from the layer's declarations (``variants``,
``reference``, ``engine_kind``, ``side_inputs``, its constructor's options), so that a layer is
added or renamed in its own file alone.

Every module of ``src/bigvocab`` outside those two packages is read with :mod:`ast`. A string in
the code (an error message, a help text, a default, a label) that spells a registered layer's
name fails, and so does an identifier or a module whose name is made of one. Docstrings and
comments are prose for the reader and may name layers as examples; keys of subscripts and dicts
(``batch["target"]``) are field names, not layer names.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import bigvocab
from bigvocab.registry import OUTPUTS

PACKAGE = Path(bigvocab.__file__).resolve().parent
#: The packages that own the layers (and the models, which may say which layer they use).
OWNERS = ("outputs", "models")
#: Layer names that are also English words: a bare word in a message is English ("the mean target
#: probability", "a sampled layer"); a quoted one, ``name[variant]``, ``name*`` or ``--output name`` is
#: the layer.
ENGLISH = {"full", "target", "sampled", "char", "adaptive"}
#: (module, whole string) that spell a layer's name but mean something else, and why.
HOMONYMS = {
    ("bench/harness/config.py", "full"): "the bench's --full preset",
    ("bench/options.py", "full"): "the bench's --full preset",
    ("bench/report.py", "full"): "the bench's --full preset",
}


def prose_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (of a module, class or function, or the
    string statement documenting an attribute) or subscript and dict keys."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            skipped.add(id(node.value))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            skipped.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            skipped.update(id(key) for key in node.keys if isinstance(key, ast.Constant))
    return skipped


def identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name.rpartition(".")[2], node.asname or ""]
    return []


def mentions_in_string(text: str, names: list[str]) -> Iterator[tuple[int, str]]:
    """(offset, name) of each layer name the string spells."""
    for name in names:
        if text == name:
            yield 0, name
            continue
        word = re.escape(name)
        pattern = (
            rf"['\"`]{word}['\"`]|(?<![\w-]){word}(?=[\[*])|--outputs? {word}(?![\w-])"
            if name in ENGLISH
            else rf"(?<![\w-]){word}(?![\w-])"
        )
        for match in re.finditer(pattern, text):
            yield match.start(), name


def layer_mentions(source: str, module: str, names: list[str]) -> Iterator[str]:
    """``module:line: ...`` for every layer name in ``source``'s code."""
    for part in re.split(r"[/_.]", module.removesuffix(".py")):
        if part in names and part not in ENGLISH:
            yield f"{module}: the module's name holds the layer name {part!r}"
    tree = ast.parse(source)
    skipped = prose_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if (module, node.value) in HOMONYMS:
                continue
            for offset, name in mentions_in_string(node.value, names):
                line = node.lineno + node.value[:offset].count("\n")
                yield f"{module}:{line}: the string {node.value[:60]!r} names the layer {name!r}"
        for identifier in identifiers(node):
            for part in identifier.lower().split("_"):
                if part in names and part not in ENGLISH:
                    yield f"{module}:{node.lineno}: the identifier {identifier!r} names the layer {part!r}"


def test_no_module_outside_the_layers_names_one():
    names = OUTPUTS.names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.split("/")[0] not in OWNERS:
            found.extend(layer_mentions(path.read_text(encoding="utf-8"), module, names))
    assert not found, "outside outputs/ and models/, code names output layers:\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for():
    """The scanner catches each form it is meant to, and passes the prose it is meant to pass."""
    names = ["hsm", "full", "target"]
    code = '''
"""A docstring may say ``hsm`` and full."""
DEFAULT = "hsm"
HELP = f"hsm: huffman or balanced trees, default {DEFAULT}"
PATTERN = "full,hsm*"
REFERENCE = "full"
MESSAGE = "use --output full"
hsm_rows = batch["target"] + len("the full softmax and its target")
'''
    found = sorted(layer_mentions(code, "bench/example.py", names))
    assert [line.split(":")[1] for line in found] == ["3", "4", "5", "6", "7", "8"], found
    assert "module's name" in next(layer_mentions("", "suites/hsm_speed.py", names))
