import time, torch, sys
sys.path.insert(0,'src')
from bigvocab.outputs.functional import _logsumexp_
N,H,C=1024,256,16384
h=torch.randn(N,H); W=torch.randn(C,H)*0.05; b=torch.randn(C)
def chunk_eager(h,W,b):
    L=torch.addmm(b,h,W.t()); return _logsumexp_(L)
def chunk_plain(h,W,b):
    L=torch.addmm(b,h,W.t()); m=L.amax(1); return m, m+torch.log(torch.exp(L-m[:,None]).sum(1))
t0=time.perf_counter(); chunk_c=torch.compile(chunk_plain, dynamic=False); chunk_c(h,W,b); print('compile s %.1f'%(time.perf_counter()-t0))
def mm(h,W,b): return torch.addmm(b,h,W.t())
res={'mm only':[], 'eager':[], 'compiled':[]}
for r in range(5):
    for k,f in [('mm only',mm),('eager',chunk_eager),('compiled',chunk_c)]:
        s=time.perf_counter(); f(h,W,b); res[k].append(time.perf_counter()-s)
for k,v in res.items(): print(k,'best %.1f ms'%(1e3*min(v)), 'median %.1f'%(1e3*sorted(v)[2]))
a=chunk_eager(h,W,b); c=chunk_c(h,W,b); print('diff', (a[1]-c[1]).abs().max().item())
