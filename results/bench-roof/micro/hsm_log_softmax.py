import sys, time, torch
sys.path.insert(0,'src')
import bigvocab
V=int(sys.argv[1]); n=int(sys.argv[2])
counts=[int(1e7/(i+1))+1 for i in range(V)]
hsm=bigvocab.create_output('hsm',256,V,counts=counts,tree='huffman').eval()
full=bigvocab.create_output('full',256,V).eval()
print('binary', hsm._binary)
h=torch.randn(n,256)
def new(): return hsm.log_softmax(h)
def old():
    with torch.enable_grad(): return hsm.log_softmax(h)
def fl(): return full.log_softmax(h)
with torch.no_grad():
    a=new(); b=old(); print('maxdiff', (a-b).abs().max().item())
    res={'full':[], 'hsm-new':[], 'hsm-old(torch levels)':[]}
    for r in range(3):
        for k,f in [('full',fl),('hsm-new',new),('hsm-old(torch levels)',old)]:
            s=time.perf_counter(); f(); res[k].append(time.perf_counter()-s)
for k,v in res.items(): print(k, 'best %.3f'%min(v), ['%.3f'%x for x in v])
