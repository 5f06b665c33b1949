"""What each rank computes in the vocabulary-parallel tests: every layer, function and gradient
against the one-process layer with the same weights and the same random draws.

:func:`all_checks` runs in every spawned process and returns ``{check name: value}``: a relative
error (max |ours - reference| / max |reference|) for numbers, or the text of the error raised for
bad setups. One spawn serves every check, because starting P processes costs seconds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

import bigvocab
from bigvocab.distributed import VocabPartition, gather_state_dict, shard_state_dict, vocab_shard
from bigvocab.errors import BigvocabError
from bigvocab.outputs.parallel import VocabParallelScorer, vocab_parallel

V, H, N = 13, 5, 7  # V divisible by neither 2 nor 3: uneven shards
COUNTS = [1000.0 / (i + 1) for i in range(V)]
CHUNK = 8  # with N = 7, one class per chunk: the streamed paths run many chunks

#: (check name, registered layer, options): every objective written against the linear rows.
OBJECTIVES: list[tuple[str, str, dict]] = [
    ("full", "full", {}),
    ("full_nobias", "full", {"bias": False}),
    ("sampled", "sampled", {"num_samples": 6}),
    ("sampled_per_example", "sampled", {"num_samples": 4, "shared": False}),
    ("sampled_with_replacement", "sampled", {"num_samples": 6, "unique": False}),
    ("nce", "nce", {"num_samples": 5}),
    ("nce_learned", "nce", {"num_samples": 5, "normaliser": "learned"}),
    ("neg", "neg", {"num_samples": 3, "zero_init": False}),
    ("target", "target", {"num_samples": 9}),
    ("selfnorm", "selfnorm", {}),
    ("infreq", "infreq", {"gamma": 0.4}),
    ("ais", "ais", {"num_samples": 4}),
]


def relative_error(ours: Tensor | None, reference: Tensor | None) -> float:
    if ours is None and reference is None:
        return 0.0
    if ours is None or reference is None:
        return float("inf")
    ours, reference = ours.detach().to_dense().double(), reference.detach().to_dense().double()
    if ours.shape != reference.shape:
        return float("inf")
    scale = reference.abs().max().clamp_min(1e-300)
    return float((ours - reference).abs().max() / scale)


def build(name: str, options: dict, dtype: torch.dtype, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    layer = bigvocab.create_output(name, H, V, counts=COUNTS, max_chunk_elements=CHUNK, **options)
    return layer.to(dtype)


def pair(name: str, options: dict, dtype: torch.dtype, group: Any) -> tuple[nn.Module, nn.Module]:
    """The one-process layer and this rank's vocabulary-parallel copy of it."""
    single = build(name, options, dtype)
    return single, vocab_parallel(copy.deepcopy(single), group)


def inputs(dtype: torch.dtype, seed: int = 1) -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(N, H, generator=generator, dtype=dtype)
    target = torch.randint(0, V, (N,), generator=generator)
    return hidden, target


def grads_error(single: nn.Module, sharded: nn.Module) -> float:
    """Largest relative error over every parameter's gradient: this rank's rows of the split ones,
    the whole of the replicated ones."""
    start, stop = sharded.shard.start, sharded.shard.stop
    worst = 0.0
    for (name, ref), (_, ours) in zip(single.named_parameters(), sharded.named_parameters()):
        ref_grad = ref.grad
        if ref_grad is not None and name in ("scorer.weight", "scorer.bias"):
            ref_grad = ref_grad.to_dense()[start:stop]
        worst = max(worst, relative_error(ours.grad, ref_grad))
    return worst


def check_objective(group: Any, name: str, options: dict, dtype: torch.dtype) -> dict[str, float]:
    single, sharded = pair(name, options, dtype, group)
    hidden, target = inputs(dtype)
    results = {}
    losses = []
    hiddens = []
    for layer in (single, sharded):
        torch.manual_seed(7)  # the same draws on every rank and in the one-process run
        h = hidden.clone().requires_grad_()
        loss = layer.loss(h, target, reduction="none")
        (loss * torch.linspace(0.5, 1.5, N, dtype=dtype)).sum().backward()  # unequal weights per example
        losses.append(loss)
        hiddens.append(h.grad)
    results["loss"] = relative_error(losses[1], losses[0])
    results["grad_hidden"] = relative_error(hiddens[1], hiddens[0])
    results["grad_params"] = grads_error(single, sharded)
    return results


def check_exact(group: Any, dtype: torch.dtype) -> dict[str, float]:
    """log_prob (and its gradients), log_softmax (and its gradients), top-k, for (N, H) and (B, T, H)."""
    single, sharded = pair("full", {}, dtype, group)
    hidden, target = inputs(dtype, seed=2)
    results: dict[str, float] = {}
    for what, call in [
        ("log_prob", lambda layer, h: layer.log_prob(h, target)),
        ("log_softmax", lambda layer, h: layer.log_softmax(h)),
    ]:
        outs, grads = [], []
        for layer in (single, sharded):
            layer.zero_grad()
            h = hidden.clone().requires_grad_()
            out = call(layer, h)
            (out * torch.rand(out.shape, generator=torch.Generator().manual_seed(3), dtype=dtype)).sum().backward()
            outs.append(out)
            grads.append(h.grad)
        results[what] = relative_error(outs[1], outs[0])
        results[f"{what}_grad_hidden"] = relative_error(grads[1], grads[0])
        results[f"{what}_grad_params"] = grads_error(single, sharded)
    for k in (1, 3, V):  # k = V exceeds every shard
        ref_values, ref_ids = single.topk(hidden, k)
        values, ids = sharded.topk(hidden, k)
        results[f"topk{k}_values"] = relative_error(values, ref_values)
        results[f"topk{k}_ids_differ"] = float((ids != ref_ids).sum())
    batched = hidden[:6].reshape(2, 3, H)
    results["log_prob_3d"] = relative_error(
        sharded.log_prob(batched, target[:6].reshape(2, 3)), single.log_prob(batched, target[:6].reshape(2, 3))
    )
    return results


def train(model: nn.Module, hidden_in: Tensor, target: Tensor, steps: int) -> list[float]:
    torch.manual_seed(11)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = model[1].loss(model[0](hidden_in), target)
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    return losses


def check_training(group: Any, name: str, options: dict, dtype: torch.dtype) -> dict[str, float]:
    """A linear encoder and the output layer, a few SGD steps: per-step losses, the encoder and the
    gathered output weights match the one-process run."""
    torch.manual_seed(5)
    encoder = nn.Linear(4, H).to(dtype)
    single_output, sharded_output = pair(name, options, dtype, group)
    single = nn.Sequential(encoder, single_output)
    sharded = nn.Sequential(copy.deepcopy(encoder), sharded_output)
    generator = torch.Generator().manual_seed(6)
    hidden_in = torch.randn(N, 4, generator=generator, dtype=dtype)
    target = torch.randint(0, V, (N,), generator=generator)
    ref_losses = torch.tensor(train(single, hidden_in, target, steps=4))
    losses = torch.tensor(train(sharded, hidden_in, target, steps=4))
    gathered = gather_state_dict(sharded, dst=None)
    reference = single.state_dict()
    return {
        "losses": relative_error(losses, ref_losses),
        "loss_moved": float((ref_losses[0] - ref_losses[-1]).abs()),
        "weights": max(relative_error(gathered[key], reference[key]) for key in reference),
    }


def check_checkpoint(group: Any) -> dict[str, Any]:
    """Gather into the one-process state dict (on rank 0 only, or everywhere); cut it back into a
    fresh shard; refuse a shard of another layout."""
    single, sharded = pair("nce", {"num_samples": 5, "normaliser": "learned"}, torch.float64, group)
    model = nn.Sequential(nn.Linear(3, H).double(), sharded)
    reference = nn.Sequential(copy.deepcopy(model[0]), single).state_dict()
    results: dict[str, Any] = {}
    on_root = gather_state_dict(model, dst=0)
    results["gather_root_is_none_elsewhere"] = (on_root is None) == (sharded.shard.rank != 0)
    gathered = gather_state_dict(model, dst=None)
    results["gather_keys_equal"] = sorted(gathered) == sorted(reference)
    results["gather_error"] = max(relative_error(gathered[key], reference[key]) for key in reference)
    # A one-process layer loads the gathered state.
    fresh_single = nn.Sequential(
        nn.Linear(3, H).double(), build("nce", {"num_samples": 5, "normaliser": "learned"}, torch.float64, seed=9)
    )
    fresh_single.load_state_dict(gathered)
    results["single_loads_gathered"] = True
    # ... and a fresh vocabulary-parallel model resumes from it.
    fresh = nn.Sequential(
        nn.Linear(3, H).double(),
        vocab_parallel(build("nce", {"num_samples": 5, "normaliser": "learned"}, torch.float64, seed=9), group),
    )
    fresh.load_state_dict(shard_state_dict(fresh, gathered))
    results["scatter_error"] = max(
        relative_error(fresh.state_dict()[key], value)
        for key, value in model.state_dict().items()
        if not key.endswith("_extra_state")
    )
    # A shard written under another layout is refused.
    local = model.state_dict()
    local["1.scorer._extra_state"] = {"rank": 0, "world_size": 2, "rows": {"weight": [1, V - 1], "bias": [1, V - 1]}}
    results["other_layout"] = raised(lambda: fresh.load_state_dict(local))
    results["wrong_rows"] = raised(
        lambda: shard_state_dict(fresh, {**gathered, "1.scorer.weight": gathered["1.scorer.weight"][:-1]})
    )
    return results


def raised(fn: Callable[[], Any]) -> str:
    """The message of the library error ``fn`` raises, or ``"no error"``."""
    try:
        fn()
    except BigvocabError as error:
        return f"{type(error).__name__}: {error}"
    return "no error"


def check_built_sharded(group: Any) -> dict[str, Any]:
    """``scorer=VocabParallelScorer(...)``: only this rank's rows are built, the ranks' random
    streams stay in step, and with the one-process rows loaded it computes the one-process loss."""
    world = torch.distributed.get_world_size(group)
    torch.manual_seed(21)
    scorer = VocabParallelScorer(H, V, process_group=group, max_chunk_elements=CHUNK, dtype=torch.float64)
    layer = bigvocab.create_output("sampled", H, V, counts=COUNTS, num_samples=6, scorer=scorer)
    after = torch.rand(1, dtype=torch.float64)
    draws = [torch.empty_like(after) for _ in range(world)]
    torch.distributed.all_gather(draws, after, group=group)
    first_rows = [torch.empty(H, dtype=torch.float64) for _ in range(world)]
    torch.distributed.all_gather(first_rows, scorer.weight.detach()[0].contiguous(), group=group)
    single = build("sampled", {"num_samples": 6}, torch.float64)
    layer.load_state_dict(shard_state_dict(layer, single.state_dict()))
    hidden, target = inputs(torch.float64)
    losses = []
    for each in (single, layer):
        torch.manual_seed(7)
        losses.append(each.loss(hidden, target, reduction="none"))
    torch.manual_seed(0)
    keyword = bigvocab.create_output("full", H, V, counts=COUNTS, max_chunk_elements=CHUNK, vocab_parallel=group).to(
        torch.float64
    )
    split = pair("full", {}, torch.float64, group)[1]
    return {
        "keyword": relative_error(keyword.log_softmax(hidden), split.log_softmax(hidden)),
        "rows": list(scorer.weight.shape),
        "streams_in_step": all(torch.equal(d, draws[0]) for d in draws),
        "rows_differ": all(not torch.equal(r, first_rows[0]) for r in first_rows[1:]),
        "in_bound": bool(scorer.weight.abs().max() <= 1 / H**0.5),
        "loss": relative_error(losses[1], losses[0]),
    }


def check_bad_setups(group: Any) -> dict[str, str]:
    world = torch.distributed.get_world_size(group)
    return {
        "structured_layer": raised(
            lambda: vocab_parallel(bigvocab.create_output("dsoftmax", H, V, counts=COUNTS), group)
        ),
        "computed_rows": raised(
            lambda: vocab_parallel(
                bigvocab.create_output(
                    "sampled",
                    H,
                    V,
                    counts=COUNTS,
                    num_samples=3,
                    scorer="cnn",
                    words=[f"w{i}" for i in range(V)],
                    char_dim=4,
                    filters=((1, 3), (2, 3)),
                    correction_dim=3,
                ),
                group,
            )
        ),
        "no_group": raised(lambda: vocab_parallel(build("full", {}, torch.float64), None)),
        "partition_world": raised(
            lambda: vocab_parallel(build("full", {}, torch.float64), group, partition=VocabPartition.even(V, world + 1))
        ),
        "partition_classes": raised(
            lambda: vocab_parallel(build("full", {}, torch.float64), group, partition=VocabPartition.even(V + 1, world))
        ),
        "more_ranks_than_classes": raised(lambda: vocab_shard(world - 1, group)),
        "tie": raised(lambda: pair("full", {}, torch.float64, group)[1].tie_weights(nn.Embedding(V, H))),
        "twice": raised(lambda: vocab_parallel(pair("full", {}, torch.float64, group)[1], group)),
    }


def all_checks(group: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        objectives = OBJECTIVES if dtype == torch.float64 else OBJECTIVES[:1] + OBJECTIVES[2:3]
        for check, name, options in objectives:
            for key, value in check_objective(group, name, options, dtype).items():
                results[f"{tag}/objective/{check}/{key}"] = value
        for key, value in check_exact(group, dtype).items():
            results[f"{tag}/exact/{key}"] = value
    for check, name, options in (OBJECTIVES[0], OBJECTIVES[2]):
        for key, value in check_training(group, name, options, torch.float64).items():
            results[f"f64/training/{check}/{key}"] = value
    for key, value in check_checkpoint(group).items():
        results[f"checkpoint/{key}"] = value
    for key, value in check_built_sharded(group).items():
        results[f"built/{key}"] = value
    for key, value in check_bad_setups(group).items():
        results[f"bad/{key}"] = value
    return results
