"""Imports run one way: every import in src/bigvocab -- at the top of a module, inside a function
(lazy) or under ``if TYPE_CHECKING:`` -- goes down the layer table below, never up and never
across a row. The rows are strictly ordered, so the package-level import graph has no cycle.

The table is copied in docs/design/layers.md, which says why the layers come in this order; a
test keeps the two the same.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "bigvocab"
DESIGN_NOTE = REPO / "docs" / "design" / "layers.md"

#: Lowest first. A unit may import its own modules and those of the units in the rows above its
#: row; units that share a row do not import each other. ``bigvocab`` is the package's own
#: ``__init__`` (the names users import from ``bigvocab``); ``bench`` is the bench's runner,
#: report, options and ``__init__``, above its ``harness`` and ``suites``.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "kernels"),
    ("validation", "files", "registry"),
    ("samplers", "data", "index", "distributed", "declarations"),
    ("outputs",),
    ("models",),
    ("checkpoint",),
    ("evaluate",),
    ("train",),
    ("word2vec",),
    ("bigvocab",),
    ("runs",),
    ("bench.harness",),
    ("bench.suites",),
    ("bench",),
    ("cli",),
]
ROW = {unit: row for row, units in enumerate(LAYERS) for unit in units}

#: Packages whose subpackages are units of their own.
SPLIT = {"bench": ("harness", "suites")}


def unit_of(module: str) -> str:
    """The unit of the table a dotted module name belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return "bigvocab"
    if len(parts) > 2 and parts[2] in SPLIT.get(parts[1], ()):
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of bigvocab (not an attribute of one)."""
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted module) of every bigvocab import in the file, wherever it stands."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "bigvocab":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base is None or base.split(".")[0] != "bigvocab":
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield node.lineno, candidate if is_module(candidate) else base
        elif isinstance(node, ast.Call) and _names_import_call(node.func):
            argument = node.args[0] if node.args else None
            if isinstance(argument, ast.Constant) and str(argument.value).split(".")[0] == "bigvocab":
                yield node.lineno, str(argument.value)


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def _names_import_call(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "__import__")


def source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_import_goes_down_the_layer_table():
    wrong = []
    for path in source_files():
        source = unit_of(module_of(path))
        for line, target in sorted(set(imported_modules(path))):
            imported = unit_of(target)
            if imported == source or imported not in ROW or source not in ROW:
                continue  # a unit missing from the table fails the test below
            if ROW[imported] >= ROW[source]:
                where = "the same row as" if ROW[imported] == ROW[source] else "a row above"
                wrong.append(
                    f"{path.relative_to(REPO)}:{line}: {source} imports {target}, in {where} it "
                    f"({imported}: row {ROW[imported]}, {source}: row {ROW[source]})"
                )
    assert not wrong, "imports against the layer table:\n" + "\n".join(wrong)


def test_the_table_holds_every_unit_and_only_those():
    found = {unit_of(module_of(path)) for path in source_files()}
    assert found - set(ROW) == set(), f"units missing from LAYERS: {sorted(found - set(ROW))}"
    assert set(ROW) - found == set(), f"LAYERS names units that do not exist: {sorted(set(ROW) - found)}"


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path, monkeypatch):
    """An import inside a function and one under TYPE_CHECKING are both found (a checker that read
    only the top of each module would let a cycle through)."""
    package = tmp_path / "bigvocab"
    (package / "outputs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "outputs" / "__init__.py").write_text("")
    (package / "train.py").write_text("")
    (package / "outputs" / "layer.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bigvocab.train import Trainer\n"
        "def f():\n    import bigvocab.train\n"
        "def g():\n    from bigvocab import train\n"
        "def h():\n    from .. import train\n"
    )
    monkeypatch.setitem(globals(), "PACKAGE", package)
    found = sorted(imported_modules(package / "outputs" / "layer.py"))
    assert found == [(3, "bigvocab.train"), (5, "bigvocab.train"), (7, "bigvocab.train"), (9, "bigvocab.train")]


def test_the_design_note_shows_the_same_table():
    rows = []
    for line in DESIGN_NOTE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].isdigit():
            rows.append(tuple(re.findall(r"`([\w.]+)`", cells[1])))
    assert rows == LAYERS, f"{DESIGN_NOTE.relative_to(REPO)}'s table differs from LAYERS"
