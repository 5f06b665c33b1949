"""Ad-hoc check (not part of the bench): faiss-hnsw against hnswlib at V = 100k, H = 256, same M and
ef_construction, on the bench's clustered weights. Run: OMP_NUM_THREADS=1 PYTHONPATH=src python results/ann/hnsw_check.py"""
import torch, time
torch.set_num_threads(1)
from bigvocab.bench.ann import AnnConfig, clustered_weights, recall
import bigvocab
V=100000
cfg=AnnConfig(vocab_size=V, hidden=256, queries=128)
d=clustered_weights(cfg)
layer=bigvocab.create_output('full',256,V).eval()
with torch.no_grad(): layer.weight.copy_(d.weight); layer.bias.copy_(d.bias)
_,ex=layer.topk(d.queries,10)
for kind in ['faiss-hnsw','hnswlib']:
    idx=layer.build_index(kind=kind)
    print(kind,'build',idx.build_seconds, flush=True)
    for ef in [40,320]:
        idx.tune(ef_search=ef)
        _,i=layer.topk(d.queries,10,index=idx,normalise=False)
        print(kind, ef, recall(i,ex), flush=True)
