"""The bench tests run many tiny operations: on a shared 2-core machine intra-op threads only
wait for each other at these sizes, so each test module runs single-threaded (module scope, so
that module-scoped runs are covered too) and the setting is restored afterwards."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
