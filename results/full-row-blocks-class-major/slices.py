"""Row blocks with the block's elementwise passes kept in cache, against the plain row blocks.

    python results/full-row-blocks-class-major/slices.py C1,C2,... ROUNDS     # slices.log: 4096,16384 2

The gradients of Σ log Z at V = 1M, H = 256, N = 1024, 256 rows a block, on plain tensors (no
optimiser). "simple" is the class-major row block as committed; "sub" computes each block in class
slices of C rows, each slice's amax / exp / sum while it is in cache, the hidden gradient with a
running rescale (as flash attention does), and the weight gradient in a second pass over the
slices. The first lines check that the two agree (max abs difference, max abs value). Result:
no faster, so not kept.
"""
import sys, time, torch
from bigvocab.outputs.functional import _logsumexp_
N, H, V = 1024, 256, 1_000_000
torch.manual_seed(0)
W = torch.randn(V, H) * 0.05; h = torch.randn(N, H)

def simple(B):
    n = N; log_z = h.new_empty(n); gh = torch.empty_like(h); gw = torch.empty_like(W)
    st = h.new_empty(B * V)
    for s in range(0, n, B):
        e = min(s + B, n); rows = h[s:e]; blk = st[: V * (e - s)].view(V, e - s)
        torch.mm(W, rows.t(), out=blk)
        peak, lz = _logsumexp_(blk, dim=0); log_z[s:e] = lz
        scale = torch.exp(peak - lz)
        torch.mm(blk.t(), W, out=gh[s:e]).mul_(scale.unsqueeze(1))
        gw.addmm_(blk, rows * scale.unsqueeze(1), beta=0.0 if s == 0 else 1.0)
    return log_z, gh, gw

def sub(B, C):
    n = N; log_z = h.new_empty(n); gh = torch.empty_like(h); gw = torch.empty_like(W)
    st = h.new_empty(B * V)
    nch = (V + C - 1) // C
    for s in range(0, n, B):
        e = min(s + B, n); rows = h[s:e]; b = e - s
        blk = st[: V * b].view(V, b)
        peaks = h.new_empty(nch, b); sums = h.new_empty(nch, b)
        acc = gh[s:e]; acc.zero_(); run = h.new_full((b,), float("-inf"))
        tmp = h.new_empty(b, H)
        for i, c0 in enumerate(range(0, V, C)):
            c1 = min(c0 + C, V); part = blk[c0:c1]; Wc = W[c0:c1]
            torch.mm(Wc, rows.t(), out=part)
            pk = part.amax(dim=0)
            part.sub_(pk).exp_()
            torch.sum(part, dim=0, out=sums[i]); peaks[i] = pk
            new = torch.maximum(run, pk)
            acc.mul_(torch.exp(run - new).unsqueeze(1))
            torch.mm(part.t(), Wc, out=tmp)
            acc.addcmul_(tmp, torch.exp(pk - new).unsqueeze(1))
            run = new
        lz = run + torch.log((sums * torch.exp(peaks - run)).sum(0)); log_z[s:e] = lz
        acc.mul_(torch.exp(run - lz).unsqueeze(1))
        scales = torch.exp(peaks - lz)  # (nch, b)
        beta = 0.0 if s == 0 else 1.0
        for i, c0 in enumerate(range(0, V, C)):
            c1 = min(c0 + C, V)
            gw[c0:c1].addmm_(blk[c0:c1], rows * scales[i].unsqueeze(1), beta=beta)
    return log_z, gh, gw

a = simple(256); b = sub(256, 8192)
for x, y in zip(a, b): print("maxdiff", (x - y).abs().max().item(), x.abs().max().item())
variants = {"simple B=256": lambda: simple(256)}
for C in [int(c) for c in sys.argv[1].split(",")]:
    variants[f"sub B=256 C={C}"] = (lambda C=C: sub(256, C))
names = list(variants); times = {n: [] for n in names}
for r in range(int(sys.argv[2]) + 1):
    for n in (names if r % 2 == 0 else names[::-1]):
        s = time.perf_counter(); variants[n](); dt = time.perf_counter() - s
        print(f"round {r} {n}: {dt:.2f} s", flush=True)
        if r: times[n].append(dt)
for n in names:
    m = sorted(times[n])[len(times[n]) // 2]
    print(f"{n}: median {m:.2f} s  {6*N*V*H/m/1e9:.1f} GFLOP/s")
