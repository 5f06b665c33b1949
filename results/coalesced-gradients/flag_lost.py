"""Does a sparse gradient that a custom autograd function returns marked coalesced reach the
parameter's ``.grad`` still marked? One backward of ``nce`` at V = 100k (the bench's workload)
with ``marked-gradients.patch`` applied: the parameter's gradient hook sees each gradient as the
function returned it, ``.grad`` holds what autograd's accumulation stored.

    git worktree add --detach /tmp/marked eeb492a   # the patch applies to the code of that commit
    (cd /tmp/marked && git apply results/coalesced-gradients/marked-gradients.patch)
    PYTHONPATH=/tmp/marked/src python results/coalesced-gradients/flag_lost.py   # flag_lost.log
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer  # noqa: E402  (results/ab_steps.py)


def main() -> None:
    layer, work = bench_layer("nce", 100_000)
    for name, param in layer.named_parameters():
        param.register_hook(lambda grad, name=name: print(f"{name}: the gradient returned is coalesced: {grad.is_coalesced()}"))
    layer.loss(work.hidden, work.target).backward()
    for name, param in layer.named_parameters():
        print(f"{name}: .grad after accumulation is coalesced: {param.grad.is_coalesced()}")


if __name__ == "__main__":
    main()
