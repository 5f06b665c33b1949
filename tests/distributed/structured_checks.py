"""What each rank computes for the structured vocabulary-parallel layers (``adaptive``, ``hsm``):
loss, log_prob, log_softmax (values and every gradient), top-k, a few SGD steps and the
checkpoint round trip, each against the one-process layer with the same weights.

:func:`structured_checks` runs in every spawned process and returns ``{check name: value}``
(relative errors, counts, or the text of an error).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from distributed_checks import H, N, all_checks, raised, relative_error, train
from torch import Tensor, nn

import bigvocab
from bigvocab.distributed import gather_state_dict, shard_state_dict
from bigvocab.distributed.rows import RowSharded
from bigvocab.outputs.parallel import vocab_parallel

#: (check name, registered layer, V, options). V = 40 gives the trees a replicated top and
#: subtrees on every rank for P = 2 and 3; adaptive's clusters (4 and 5 rows at V = 13, 3 cut
#: points at V = 40) split unevenly.
STRUCTURED: list[tuple[str, str, int, dict]] = [
    ("adaptive", "adaptive", 13, {"cutoffs": [4, 8]}),
    ("adaptive_head_bias", "adaptive", 40, {"cutoffs": [5, 12, 25], "bias": True}),
    ("hsm_huffman", "hsm", 40, {"tree": "huffman"}),
    ("hsm_class", "hsm", 40, {"tree": "class"}),
    ("hsm_balanced_nobias", "hsm", 40, {"tree": "balanced", "bias": False}),
]
#: The layers also checked in float32 (one of each kind: the maths is the same in every variant).
F32_CHECKS = ("adaptive", "hsm_huffman")
CHUNK = 64  # a few rows per chunk: the streamed paths run many chunks


def build(name: str, num_classes: int, options: dict, dtype: torch.dtype, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    counts = [1000.0 / (i + 1) for i in range(num_classes)]
    layer = bigvocab.create_output(name, H, num_classes, counts=counts, max_chunk_elements=CHUNK, **options)
    return layer.to(dtype)


def layouts(module: nn.Module) -> dict:
    """Parameter name -> this rank's row layout, for the row-split parameters of ``module``."""
    return {
        (f"{prefix}." if prefix else "") + name: layout
        for prefix, sub in module.named_modules()
        if isinstance(sub, RowSharded)
        for name, layout in sub.sharded_rows().items()
    }


def grads_error(single: nn.Module, sharded: nn.Module) -> float:
    """Largest relative error over every parameter's gradient: this rank's rows of the split ones
    (their one-process rows cut by the layer's own layout), the whole of the replicated ones."""
    split = layouts(sharded)
    ours = dict(sharded.named_parameters())
    worst = 0.0
    for name, ref in single.named_parameters():
        ref_grad = None if ref.grad is None else ref.grad.to_dense()
        if ref_grad is not None and name in split:
            ref_grad = split[name].cut(ref_grad, key=name)
        grad = ours[name].grad
        worst = max(worst, relative_error(None if grad is None else grad.to_dense(), ref_grad))
    return worst


def inputs(num_classes: int, dtype: torch.dtype, seed: int) -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(N, H, generator=generator, dtype=dtype) * 2  # peaked enough for a search
    return hidden, torch.randint(0, num_classes, (N,), generator=generator)


def check_values(group: Any, name: str, num_classes: int, options: dict, dtype: torch.dtype) -> dict[str, float]:
    single = build(name, num_classes, options, dtype)
    sharded = vocab_parallel(copy.deepcopy(single), group)
    hidden, target = inputs(num_classes, dtype, seed=2)
    weights = torch.rand(N, num_classes, generator=torch.Generator().manual_seed(3), dtype=dtype)
    results: dict[str, float] = {}
    for what, call in [
        ("loss", lambda layer, h: layer.loss(h, target, reduction="none") * weights[:, 0]),
        ("log_prob", lambda layer, h: layer.log_prob(h, target)),
        ("log_softmax", lambda layer, h: layer.log_softmax(h) * weights),
    ]:
        outs, grads = [], []
        for layer in (single, sharded):
            layer.zero_grad()
            h = hidden.clone().requires_grad_()
            out = call(layer, h)
            out.sum().backward()
            outs.append(out)
            grads.append(h.grad)
        results[what] = relative_error(outs[1], outs[0])
        results[f"{what}_grad_hidden"] = relative_error(grads[1], grads[0])
        results[f"{what}_grad_params"] = grads_error(single, sharded)
    for k in (1, 3, num_classes):
        ref_values, ref_ids = single.topk(hidden, k)
        values, ids = sharded.topk(hidden, k)
        results[f"topk{k}_values"] = relative_error(values, ref_values)
        results[f"topk{k}_ids_differ"] = float((ids != ref_ids).sum())
    # One target only: most ranks own no step of it, and must still meet in backward.
    grads = []
    for layer in (single, sharded):
        h = hidden[:1].clone().requires_grad_()
        layer.log_prob(h, target[:1]).sum().backward()
        grads.append(h.grad)
    results["one_target_grad_hidden"] = relative_error(grads[1], grads[0])
    return results


def check_training_and_checkpoint(group: Any, name: str, num_classes: int, options: dict) -> dict[str, Any]:
    """SGD steps (per-step losses, gathered weights) and the checkpoint round trip: gathered on
    rank 0 only, loaded by a one-process layer, cut back into a fresh vocabulary-parallel one."""
    dtype = torch.float64
    torch.manual_seed(5)
    encoder = nn.Linear(4, H).to(dtype)
    single_output = build(name, num_classes, options, dtype)
    single = nn.Sequential(encoder, single_output)
    sharded = nn.Sequential(copy.deepcopy(encoder), vocab_parallel(copy.deepcopy(single_output), group))
    generator = torch.Generator().manual_seed(6)
    hidden_in = torch.randn(N, 4, generator=generator, dtype=dtype)
    target = torch.randint(0, num_classes, (N,), generator=generator)
    ref_losses = torch.tensor(train(single, hidden_in, target, steps=3))
    losses = torch.tensor(train(sharded, hidden_in, target, steps=3))
    reference = single.state_dict()
    on_root = gather_state_dict(sharded, dst=0)
    gathered = gather_state_dict(sharded, dst=None)
    fresh_single = nn.Sequential(nn.Linear(4, H).to(dtype), build(name, num_classes, options, dtype, seed=9))
    fresh_single.load_state_dict(gathered)
    fresh = nn.Sequential(
        nn.Linear(4, H).to(dtype), vocab_parallel(build(name, num_classes, options, dtype, seed=9), group)
    )
    fresh.load_state_dict(shard_state_dict(fresh, gathered))
    local = sharded.state_dict()
    key = next(k for k in local if k.endswith("_extra_state"))
    local[key] = {**local[key], "world_size": local[key]["world_size"] + 1}
    return {
        "losses": relative_error(losses, ref_losses),
        "loss_moved": float((ref_losses[0] - ref_losses[-1]).abs()),
        "weights": max(relative_error(gathered[k], reference[k]) for k in reference),
        "gather_keys_equal": sorted(gathered) == sorted(reference),
        "gather_root_is_none_elsewhere": (on_root is None) == (torch.distributed.get_rank(group) != 0),
        "single_loads_gathered": max(relative_error(fresh_single.state_dict()[k], reference[k]) for k in reference),
        "scatter_error": max(
            relative_error(fresh.state_dict()[k], v)
            for k, v in sharded.state_dict().items()
            if not k.endswith("_extra_state")
        ),
        "other_layout": raised(lambda: fresh.load_state_dict(local)),
    }


def structured_checks(group: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for check, name, num_classes, options in STRUCTURED:
        for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
            if tag == "f64" or check in F32_CHECKS:
                for key, value in check_values(group, name, num_classes, options, dtype).items():
                    results[f"{tag}/{check}/{key}"] = value
        for key, value in check_training_and_checkpoint(group, name, num_classes, options).items():
            results[f"train/{check}/{key}"] = value
    results["bad/adaptive_partition"] = raised(
        lambda: vocab_parallel(build("adaptive", 13, {"cutoffs": [4, 8]}, torch.float64), group, partition=object())
    )
    results["bad/adaptive_small_cluster"] = raised(
        lambda: vocab_parallel(build("adaptive", 13, {"cutoffs": [4, 12]}, torch.float64), group)
    )
    results["bad/hsm_twice"] = raised(
        lambda: vocab_parallel(vocab_parallel(build("hsm", 40, {}, torch.float64), group), group)
    )
    return results


def vocab_parallel_checks(group: Any) -> dict[str, Any]:
    """Every vocabulary-parallel check, the linear-row layers' and the structured ones, in one spawn
    (starting P processes costs seconds of CPU; the two sets of keys are disjoint)."""
    return {**all_checks(group), **structured_checks(group)}
