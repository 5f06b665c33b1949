"""A description of the machine a run measured, stored beside its figures."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

import torch


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def source_revision() -> str | None:
    """The git commit the imported bigvocab comes from, with ``+changes`` when its files differ
    from it; None outside a git checkout (an installed wheel) or without git."""
    package = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        changed = subprocess.run(
            ["git", "-C", str(package), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+changes" if changed.stdout.strip() else "")


def describe_machine(device: torch.device) -> dict:
    """CPU model, logical cores, cores usable by this process, memory, torch threads and
    version, Python, OS, the device (and the GPU's name when it is one), the date, and the
    bigvocab version and source revision (:func:`source_revision`)."""
    from bigvocab import __version__

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    description = {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gib": _memory_gib(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
        "bigvocab": __version__,
        "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if device.type == "cuda":
        description["gpu"] = torch.cuda.get_device_name(device)
    return description
