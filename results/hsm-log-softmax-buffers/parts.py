"""Where hsm's exact log_softmax spends its time at V = 1M, N' = 268, against full's parts."""
import time, torch, bigvocab
from bigvocab.bench.side_data import synthetic_side_data
from bigvocab.outputs.tree_kernels import binary_leaf_log_probs
V, H, N = 1_000_000, 256, 268
side = synthetic_side_data(V)
torch.manual_seed(0)
hidden = torch.randn(N, H)
full = bigvocab.create_output("full", H, V).eval()
hsm = bigvocab.create_output("hsm", H, V, tree="balanced", counts=side.counts).eval()
def t(fn, reps=3):
    fn(); best = []
    for _ in range(reps):
        s = time.perf_counter(); fn(); best.append(time.perf_counter() - s)
    return min(best)
with torch.no_grad():
    W, b = full.weight, full.bias
    print("full addmm (268, 1M)      ", round(t(lambda: torch.addmm(b, hidden, W.t())), 3))
    logits = torch.addmm(b, hidden, W.t())
    print("full log_softmax of logits", round(t(lambda: torch.log_softmax(logits, 1)), 3))
    print("full layer log_softmax    ", round(t(lambda: full.log_softmax(hidden)), 3))
    print("hsm layer log_softmax     ", round(t(lambda: hsm.log_softmax(hidden)), 3))
    rows = 16
    h16 = hidden[:rows]
    nl = hsm._example_logits(h16)
    chunks = N / rows
    print("hsm per-chunk logits x chunks", round(t(lambda: hsm._example_logits(h16)) * chunks, 3))
    print("hsm per-chunk softplus x chunks", round(t(lambda: torch.nn.functional.softplus(nl, threshold=40.0).neg_()) * chunks, 3))
    children = hsm._children.view(-1, 2)
    print("hsm per-chunk softplus+pass x chunks", round(t(lambda: binary_leaf_log_probs(nl, children, threads=torch.get_num_threads())) * chunks, 3))
    big = hsm._example_logits(hidden[:134])
    print("hsm logits 134 rows x2    ", round(t(lambda: hsm._example_logits(hidden[:134])) * 2, 3))
