"""ms per row of char's exact whole-trie ``log_softmax`` on Brown's vocabulary, and its exactness.

The layer is ``char`` with the Brown run's settings (constrained and open, LSTM of 128, character
embeddings of 32, H = 100) over the 14,039 words of ``brown-bengio``; weights are the seeded
initial ones (the cost does not depend on their values). Run it once per source tree, taking
turns, to compare two implementations on the same load (see README.md):

    OMP_NUM_THREADS=1 PYTHONPATH=SRC python results/char-brown/log_softmax_speed.py BROWN_DIR [ROWS] [ROUNDS]

Prints one JSON line: ms/row per mode, wall clock and this process's CPU time (median over
rounds; on a loaded machine the CPU time is the steadier of the two, the pass being one thread),
and in float64 the worst |1 - sum_w p(w | h)| over 4 rows (the V probabilities must sum to one).
"""
import json
import statistics
import sys
import time

import torch

import bigvocab
from bigvocab.data.corpora import load_corpus

torch.set_num_threads(1)
brown, rows, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16, int(sys.argv[3]) if len(sys.argv) > 3 else 3
vocab = load_corpus(f"brown-bengio:{brown}").vocab
words = list(vocab.words)
hidden = torch.randn(rows, 100, generator=torch.Generator().manual_seed(0))
result = {"source": bigvocab.__file__, "V": len(words), "rows": rows, "rounds": rounds}
for constrained in (True, False):
    torch.manual_seed(0)
    layer = bigvocab.create_output("char", 100, len(words), words=words, constrained=constrained).eval()
    mode = "constrained" if constrained else "open"
    with torch.no_grad():
        wall, cpu = [], []
        for _ in range(rounds):
            start, start_cpu = time.perf_counter(), time.process_time()
            layer.log_softmax(hidden)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        log_p = layer.double().log_softmax(hidden[:4].double())
    result[f"{mode}_ms_per_row"] = 1000 * statistics.median(wall) / rows
    result[f"{mode}_cpu_ms_per_row"] = 1000 * statistics.median(cpu) / rows
    result[f"{mode}_max_sum_error"] = float((log_p.exp().sum(1) - 1).abs().max())
print(json.dumps(result))
