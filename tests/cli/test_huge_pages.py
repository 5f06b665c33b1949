"""The CLI asks PyTorch's CPU allocator for transparent huge pages, and it is not too late to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bigvocab.cli import main

THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")

# Counts the page faults of filling a fresh 64 MiB tensor after importing the CLI and setting the
# variable as main() does: 16,384 faults on 4 KiB pages, 32 on 2 MiB ones.
FAULTS_AFTER_IMPORT = """
import os, resource
import bigvocab.cli
os.environ["THP_MEM_ALLOC_ENABLE"] = "1"
import torch
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
torch.empty(1 << 24).fill_(1.0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_main_sets_the_variable_unless_the_user_did(monkeypatch):
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    assert main(["--version"]) == 0
    assert os.environ["THP_MEM_ALLOC_ENABLE"] == "1"
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")
    assert main(["--version"]) == 0
    assert os.environ["THP_MEM_ALLOC_ENABLE"] == "0"


@pytest.mark.skipif(
    not THP_MODE.exists() or "[never]" in THP_MODE.read_text(), reason="this kernel gives no transparent huge pages"
)
def test_importing_the_cli_allocates_no_tensor_so_the_setting_takes_effect():
    """PyTorch reads the variable at its first CPU allocation: an import-time tensor would make it
    silently void. The fresh 64 MiB tensor must fault far fewer pages than its 16,384 small ones."""
    faults = int(
        subprocess.run([sys.executable, "-c", FAULTS_AFTER_IMPORT], check=True, capture_output=True, text=True).stdout
    )
    assert faults < 4096, f"{faults} page faults for 64 MiB: huge pages not in use"
