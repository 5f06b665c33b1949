import sys, time, importlib.util, torch
sys.path.insert(0,'src')
from bigvocab.outputs import functional as new
spec=importlib.util.spec_from_file_location('oldf','old_functional.py'); old=importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
N,H=1024,256; V=int(sys.argv[1]); budgets=[int(x) for x in sys.argv[2].split(',')]
torch.manual_seed(0)
h=torch.randn(N,H,requires_grad=True); W=(torch.randn(V,H)*0.05).requires_grad_(); b=torch.zeros(V,requires_grad=True); t=torch.randint(0,V,(N,))
def step(mod,budget):
    lz,tl=mod.chunked_logsumexp(h,W,b,t,max_chunk_elements=budget); (lz-tl).mean().backward(); h.grad=W.grad=b.grad=None
cfgs=[('old',old,1<<24)]+[('new',new,bb) for bb in budgets]
res={c[0]+str(c[2]):[] for c in cfgs}
for c in cfgs: step(c[1],c[2])
for r in range(int(sys.argv[3]) if len(sys.argv)>3 else 2):
    for name,mod,bb in cfgs:
        s=time.perf_counter(); step(mod,bb); res[name+str(bb)].append(time.perf_counter()-s)
fl=3*2*N*V*H/1e9
for k,v in res.items(): print(k, 'best %.3fs'%min(v), 'GF/s %.1f'%(fl/min(v)))
