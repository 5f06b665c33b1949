"""The parts of one class-major row block of `full`'s step at V = 1M, timed alone.

    python results/full-row-blocks-class-major/products.py ROWS        # products.log: ROWS = 256

H = 256, N = 1024 (so 1024 / ROWS blocks a step), two threads. Each line is the mean of 2 calls
after a warm-up, scaled to a step. The elementwise line also takes a log after the exp (so that
repeated calls keep the values bounded), so it overstates the step's subtract-and-exp pass.
"""
import time, resource, torch, sys
N, H, V = 1024, 256, 1_000_000
B = int(sys.argv[1])
torch.manual_seed(0)
W = torch.randn(V, H) * 0.05; h = torch.randn(B, H)
buf = torch.empty(V, B); gh = torch.empty(B, H); gw = torch.empty(V, H); gw.zero_()
def t(name, f, reps=2):
    f()
    r0 = resource.getrusage(resource.RUSAGE_SELF); s = time.perf_counter()
    for _ in range(reps): f()
    dt = (time.perf_counter() - s) / reps; r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{name:32s} {dt*1e3:8.1f} ms/block  x{N//B} = {dt*N/B:.2f} s/step  sys {(r1.ru_stime-r0.ru_stime)/reps*1e3:.0f} ms", flush=True)
fl = 2 * V * H * B
t("mm W h^T -> (V,B)", lambda: torch.mm(W, h.t(), out=buf))
print("   GFLOP/s", fl / 1e9 / ( (lambda s: (torch.mm(W, h.t(), out=buf), time.perf_counter() - s)[1])(time.perf_counter()) ))
buf.mul_(0.01)
t("amax dim0", lambda: buf.amax(dim=0))
t("sub_ exp_ (in place)", lambda: buf.sub_(0.0).exp_().log_() )
t("sum dim0", lambda: buf.sum(dim=0))
t("mm buf^T W -> (B,H)", lambda: torch.mm(buf.t(), W, out=gh))
t("addmm_ gw += buf h", lambda: gw.addmm_(buf, h))
t("mm gw = buf h (beta 0)", lambda: torch.mm(buf, h, out=gw))
