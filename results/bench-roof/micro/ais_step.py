import sys, time, torch
sys.path.insert(0, sys.argv[1] if len(sys.argv)>1 else 'src')
import bigvocab
from bigvocab.bench.operations import make_workload, training_step, make_optimizer
V=int(sys.argv[2]); names=sys.argv[3].split(',')
torch.manual_seed(0)
counts=[int(1e6/(i+1)) +1 for i in range(V)]
wl=make_workload(counts,256,1024,64,seed=0,device=torch.device('cpu'))
layers={}
for n in names:
    kw={'shared':True} if n=='ais-shared' else {}
    base='ais' if n.startswith('ais') else n
    layers[n]=bigvocab.create_output(base,256,V,counts=counts,**kw)
opts={n:make_optimizer(l) for n,l in layers.items()}
for n in names: training_step(layers[n],opts[n],wl)
res={n:[] for n in names}
for r in range(3):
    for n in names:
        s=time.perf_counter(); training_step(layers[n],opts[n],wl); res[n].append(time.perf_counter()-s)
for n in names: print(n, V, ' '.join('%.3f'%x for x in res[n]), getattr(layers[n],'last_num_samples',''), getattr(layers[n],'last_ess',''))
if len(sys.argv)>4:
    from torch.profiler import profile
    with profile() as p: training_step(layers[names[-1]],opts[names[-1]],wl)
    print(p.key_averages().table(sort_by='self_cpu_time_total', row_limit=15))
