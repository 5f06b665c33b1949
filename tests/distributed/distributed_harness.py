"""Run a function on P local processes joined by a gloo process group, from inside a test.

Each process uses one thread and the file-based rendezvous (no port to race for). The function
gets the group explicitly and returns a JSON-able result; :func:`run_ranks` returns the results in
rank order, and an exception in any rank fails the test with that rank's traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _entry(rank: int, world_size: int, out_dir: str, fn: Callable[..., Any], kwargs: dict) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/rendezvous", rank=rank, world_size=world_size)
    try:
        result = fn(dist.group.WORLD, **kwargs)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
        # A rank that tears gloo down while a peer still talks to it can abort the peer: leave together.
        if dist.is_initialized():  # fn may have left the group itself (DistributedTraining.leave)
            dist.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    # Even after the barrier and the teardown, a rank was aborted at exit in two loaded full-suite
    # runs ("terminate called without an active exception": a still-joinable C++ thread destroyed
    # by the interpreter's finalisation). The result is on disk and the group is gone, so the
    # process ends here without running the finalisation the test does not check.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_ranks(world_size: int, fn: Callable[..., Any], out_dir: Path, **kwargs: Any) -> list[Any]:
    """``fn(group, **kwargs)`` on ``world_size`` spawned processes; their results, rank order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    mp.spawn(_entry, args=(world_size, str(out_dir), fn, kwargs), nprocs=world_size, join=True)
    return [json.loads(Path(out_dir, f"rank{rank}.json").read_text()) for rank in range(world_size)]


_spawned: dict[tuple[str, int], list[Any]] = {}


def ranks_once(world_size: int, fn: Callable[..., Any], tmp_path_factory: Any) -> list[Any]:
    """:func:`run_ranks` of ``fn`` on ``world_size`` processes, spawned once per test session
    (starting P processes costs seconds, so every test of a module reads one spawn's results)."""
    key = (f"{fn.__module__}.{fn.__qualname__}", world_size)
    if key not in _spawned:
        _spawned[key] = run_ranks(world_size, fn, tmp_path_factory.mktemp(f"{fn.__name__}-P{world_size}"))
    return _spawned[key]
