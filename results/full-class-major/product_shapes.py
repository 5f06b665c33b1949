"""The four products of a chunked softmax step, in both orientations, one thread: GFLOP/s.

    python results/full-class-major/product_shapes.py

M rows of h (M, 256), N classes of W (N, 256): hWt = h W^T (M, N), Wht = W h^T (N, M),
PW = P W (M, 256) and Pth = P^T h (N, 256); best of 3 calls each.
"""
import time, torch
torch.set_num_threads(1)
H = 256
def t(f, r=3):
    best = 1e9
    for _ in range(r):
        s = time.perf_counter(); f(); best = min(best, time.perf_counter() - s)
    return best
for M, N in [(134, 131072), (1024, 16384), (1024, 131072), (256, 65536), (512, 32768), (2048, 8192)]:
    h = torch.randn(M, H); W = torch.randn(N, H); E = torch.empty(M, N); Et = torch.empty(N, M)
    P = torch.randn(M, N).abs_()
    gh = torch.empty(M, H); gW = torch.empty(N, H)
    flop = 2 * M * N * H / 1e9
    res = []
    for name, f in [("hWt", lambda: torch.mm(h, W.t(), out=E)), ("Wht", lambda: torch.mm(W, h.t(), out=Et)),
                    ("PW", lambda: torch.mm(P, W, out=gh)), ("Pth", lambda: torch.mm(P.t(), h, out=gW))]:
        f(); res.append(f"{name} {flop / t(f):5.1f}")
    print(M, N, " ".join(res), flush=True)
