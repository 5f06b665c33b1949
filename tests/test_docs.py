"""The documentation keeps its promises: every relative link in README.md and docs/ resolves, and
every Python block runs as written, in order, one namespace per document.

Conventions a document may use (an HTML comment on the line just before a block's opening fence):
- ``<!-- docs-test: torchrun 2 -->``: the block runs alone as a script under
  ``torchrun --standalone --nproc_per_node 2`` (gloo on the CPU);
- ``<!-- docs-test: cuda -->``: the block needs a GPU and is skipped without one.
Each document's blocks run in a fresh temporary working directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *REPO.glob("docs/**/*.md")])
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"<!--\s*docs-test:\s*(.+?)\s*-->")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@dataclass
class Block:
    document: Path
    line: int
    code: str
    mark: str


def python_blocks(document: Path) -> list[Block]:
    """The ```python blocks of ``document`` with the docs-test mark just above each, if any."""
    blocks: list[Block] = []
    lines = document.read_text(encoding="utf-8").splitlines()
    inside, language, start, body = False, "", 0, []
    for number, line in enumerate(lines, start=1):
        fence = FENCE.match(line.strip()) if line.lstrip().startswith("```") else None
        if fence and not inside:
            inside, language, start, body = True, fence.group(1), number, []
        elif fence is not None and inside and not fence.group(1):
            inside = False
            if language == "python":
                above = lines[start - 2] if start >= 2 else ""
                mark = MARK.search(above)
                blocks.append(Block(document, start, "\n".join(body) + "\n", mark.group(1) if mark else ""))
        elif inside:
            body.append(line)
    return blocks


def relative_links(document: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", document.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(document: Path) -> None:
    missing = [t for t in relative_links(document) if not (document.parent / t.split("#")[0]).exists()]
    assert not missing, f"{document.relative_to(REPO)}: links to missing files {missing}"


DOCUMENTS_WITH_CODE = [d for d in DOCUMENTS if python_blocks(d)]


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS_WITH_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_every_python_block_runs_in_order(document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in python_blocks(document):
        where = f"{document.relative_to(REPO)}:{block.line}"
        if block.mark == "cuda" and not torch.cuda.is_available():
            continue
        if block.mark.startswith("torchrun"):
            run_under_torchrun(block, int(block.mark.split()[1]), tmp_path, where)
            continue
        assert not block.mark or block.mark == "cuda", f"{where}: unknown docs-test mark {block.mark!r}"
        try:
            exec(compile(block.code, where, "exec"), namespace)
        except Exception as error:  # the block's own failure, reported with where it stands
            raise AssertionError(f"the Python block at {where} fails: {type(error).__name__}: {error}") from error


def run_under_torchrun(block: Block, processes: int, directory: Path, where: str) -> None:
    script = directory / f"block_{block.line}.py"
    script.write_text(block.code, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={processes}",
        str(script),
    ]
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"the torchrun block at {where} fails:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
