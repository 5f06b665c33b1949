"""One optimiser update of a (V,) bias and of a (V, 256) weight at V = 1M by a sparse gradient of
12,400 distinct, sorted rows (``nce``'s step at V = 1M touches about that many), built as
``gather_rows``' backward builds it, unmarked (the code before) or marked coalesced: SGD's
``add_`` (what ``torch.optim.SGD`` does with a sparse gradient), and the ``coalesce`` that
``torch.optim.Adagrad`` and ``SparseAdam`` (and ``bigvocab.train.clip_grad_norm``) call first.
Mean of 50 calls after one untimed, three rounds, the variants in turn.

    THP_MEM_ALLOC_ENABLE=1 python results/coalesced-gradients/updates.py   # updates.log
"""
from __future__ import annotations

import time

import torch

V, U, H = 1_000_000, 12_400, 256


def mean_ms(call, count: int = 50) -> float:
    call()
    start = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - start) / count * 1e3


def main() -> None:
    torch.manual_seed(0)
    ids = torch.randperm(V)[:U].sort().values
    params = {"bias": torch.zeros(V), "weight": torch.zeros(V, H)}
    values = {"bias": torch.randn(U), "weight": torch.randn(U, H)}
    for round_ in range(3):
        for name, param in params.items():
            times = []
            for marked in (False, True):
                grad = torch.sparse_coo_tensor(ids.unsqueeze(0), values[name], param.shape, check_invariants=False,
                                               is_coalesced=marked)
                times.append((mean_ms(lambda: param.add_(grad, alpha=-0.1)), mean_ms(grad.coalesce)))
            (add_before, coalesce_before), (add_after, coalesce_after) = times
            print(f"round {round_ + 1} {name} {tuple(param.shape)}: SGD add_ {add_before:.3f} -> {add_after:.3f} ms, "
                  f"coalesce {coalesce_before:.3f} -> {coalesce_after:.3f} ms (unmarked -> marked)", flush=True)


if __name__ == "__main__":
    main()
