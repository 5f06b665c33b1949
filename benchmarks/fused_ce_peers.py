"""bigvocab's ``full`` against Liger Kernel's and Apple's (Cut Cross-Entropy) fused linear cross-entropy.

One training step (loss of N rows, mean, then backward into the hidden states and the (V, H)
weights), timed with CUDA events (median of several after a warm-up) and its peak memory above
what the inputs hold, for each implementation that imports, at two shapes: the bench's
(N = 1024, H = 256, V = 1M) and an LLM-like one (N = 8192, H = 2048, V = 128k). Each is run in
float32 with TF32 matrix products off (the torch default), float32 with TF32 on (what Triton's
``tl.dot`` uses for float32 by default), and bfloat16. Its loss and gradients are compared with a
float64 computation of the same step (relative L2 error), so a fast wrong answer shows.

Usage (a CUDA machine; Liger and CCE optional):
    python fused_ce_peers.py [--shapes NxHxV,...] [--modes bf16,tf32,fp32] [--impls NAME,...] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import traceback

import torch
import torch.nn.functional as F

import bigvocab

SHAPES = "1024x256x1000000,8192x2048x128256"
MODES = "fp32,tf32,bf16"


def bigvocab_full(max_chunk_elements=None):
    def build(hidden, weight, target):
        layer = bigvocab.create_output(
            "full",
            weight.shape[1],
            weight.shape[0],
            bias=False,
            max_chunk_elements=max_chunk_elements,
            device=weight.device,
            dtype=weight.dtype,
        )
        layer.scorer.weight = torch.nn.Parameter(weight.detach().clone())
        return layer, lambda h: layer.loss(h, target), lambda: layer.scorer.weight.grad

    return build


def training_step(owner, forward, hidden):
    """One step of an implementation: zero its gradients, the loss of ``hidden``, backward."""

    def step():
        hidden.grad = None
        if hasattr(owner, "zero_grad"):
            owner.zero_grad(set_to_none=True)
        else:
            owner.grad = None
        loss = forward(hidden)
        loss.backward()
        return loss

    return step


def torch_linear(hidden, weight, target):
    w = torch.nn.Parameter(weight.detach().clone())
    return w, lambda h: F.cross_entropy(h @ w.t(), target), lambda: w.grad


def liger(chunk_mem_const):
    def build(hidden, weight, target):
        from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

        w = torch.nn.Parameter(weight.detach().clone())

        def loss(h):
            return liger_fused_linear_cross_entropy(h, w, target, chunk_mem_const=chunk_mem_const)

        return w, loss, lambda: w.grad

    return build


def cce(filter_eps):
    def build(hidden, weight, target):
        from cut_cross_entropy import linear_cross_entropy

        w = torch.nn.Parameter(weight.detach().clone())
        return w, lambda h: linear_cross_entropy(h, w, target, filter_eps=filter_eps), lambda: w.grad

    return build


IMPLEMENTATIONS = {
    "bigvocab full": bigvocab_full(),
    # The budget before CUDA had its own (vocabulary chunks at 1M: four products), and one that
    # keeps all N x V logits (three products, no row blocks).
    "bigvocab full (2**24)": bigvocab_full(1 << 24),
    "bigvocab full (2**30)": bigvocab_full(1 << 30),
    "torch linear+CE": torch_linear,
    # Liger sizes its row chunks so that (rows, V) logits match the (N, H) input; at V / H in the
    # thousands that is one row. 256 times that budget gives 64-row chunks at 1024 x 256 x 1M.
    "liger FLCE (chunk_mem_const=256)": liger(256),
    "CCE (exact, filter_eps=None)": cce(None),
    "CCE (default filter)": cce("high"),
    # Last: with its default one-row chunks it takes seconds a step at 1024 x 256 x 1M.
    "liger FLCE": liger(1),
}


def reference(hidden, weight, target):
    h = hidden.detach().double().requires_grad_(True)
    w = weight.detach().double().requires_grad_(True)
    logits = h @ w.t()
    loss = F.cross_entropy(logits, target)
    loss.backward()
    return loss.item(), h.grad.float(), w.grad.float()


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def time_step(step, repeats=10):
    times = []
    for i in range(repeats + 3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--shapes", default=SHAPES, help="comma-separated NxHxV, run in this order")
    parser.add_argument("--modes", default=MODES, help="comma-separated fp32, tf32, bf16, run in this order")
    parser.add_argument("--impls", help="comma-separated names to run (default: all)")
    args = parser.parse_args()
    shapes = [tuple(int(x) for x in shape.split("x")) for shape in args.shapes.split(",")]
    implementations = {
        name: build for name, build in IMPLEMENTATIONS.items() if not args.impls or name in args.impls.split(",")
    }
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    print(f"device: {props.name}, torch {torch.__version__}", flush=True)
    rows = []
    for n, h_dim, v in shapes:
        gen = torch.Generator(device="cpu").manual_seed(0)
        hidden64 = torch.randn(n, h_dim, generator=gen, dtype=torch.float64) / math.sqrt(h_dim)
        weight64 = torch.randn(v, h_dim, generator=gen, dtype=torch.float64)
        target = torch.randint(0, v, (n,), generator=gen).to(device)
        ref_cache = {}
        for mode in args.modes.split(","):
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            dtype = torch.bfloat16 if mode == "bf16" else torch.float32
            hidden0 = hidden64.to(device=device, dtype=dtype)
            weight0 = weight64.to(device=device, dtype=dtype)
            key = "bf16" if mode == "bf16" else "fp32"  # the reference sees the same rounded inputs
            if key not in ref_cache:
                try:
                    ref_cache[key] = reference(hidden0.float(), weight0.float(), target)
                except torch.OutOfMemoryError:
                    ref_cache[key] = None
                torch.cuda.empty_cache()
            ref = ref_cache[key]
            flops = 6 * n * h_dim * v
            for name, build in implementations.items():
                row = {"impl": name, "N": n, "H": h_dim, "V": v, "mode": mode}
                try:
                    owner, forward, weight_grad = build(hidden0, weight0, target)
                    hidden = hidden0.clone().requires_grad_(True)

                    step = training_step(owner, forward, hidden)

                    loss = step()
                    torch.cuda.synchronize()
                    if ref is not None:
                        row["loss_rel_err"] = abs(loss.item() - ref[0]) / abs(ref[0])
                        row["hidden_grad_rel_err"] = rel(hidden.grad, ref[1])
                        row["weight_grad_rel_err"] = rel(weight_grad(), ref[2])
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                    step()
                    torch.cuda.synchronize()
                    row["peak_extra_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
                    median, low, high = time_step(step, args.repeats)
                    row.update(ms=median, ms_min=low, ms_max=high, tflops=flops / median / 1e9)
                    del owner, forward, hidden, step
                except Exception as error:  # an implementation that does not install or run is a row too
                    row["error"] = f"{type(error).__name__}: {error}"[:300]
                    traceback.print_exc(limit=2)
                torch.cuda.empty_cache()
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| impl | N x H x V | mode | ms | TFLOP/s | peak extra MiB | loss err | dW err |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['impl']} | {r['N']}x{r['H']}x{r['V']} | {r['mode']} | error: {r['error'][:60]} |")
            continue
        print(
            f"| {r['impl']} | {r['N']}x{r['H']}x{r['V']} | {r['mode']} | {r['ms']:.2f} | {r['tflops']:.1f} | "
            f"{r['peak_extra_mib']:.0f} | {r.get('loss_rel_err', float('nan')):.1e} | "
            f"{r.get('weight_grad_rel_err', float('nan')):.1e} |"
        )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
