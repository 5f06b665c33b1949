"""``bench --word2vec``'s speed rows for some combinations only (1 and 2 threads, the same
synthetic corpus, pairing and alternation), written as ``word2vec.json`` / ``word2vec.md`` to
OUT: session 5 ran the table in parts because the shared machine was too loaded (load average
11-13 on 2 cores) for the whole table to finish in the time left.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=src python results/word2vec-synthetic-quiet/rows.py OUT "sg + hs"
"""
import json
import sys
from pathlib import Path

import torch

from bigvocab.bench import word2vec as bench

out, labels = Path(sys.argv[1]), sys.argv[2:]
torch.set_num_threads(1)
bench.SPEED_ROWS = tuple(row for row in bench.SPEED_ROWS if row[0] in labels)
rows = bench.speed_table(bench.synthetic_sentences(), repeats=3)
out.mkdir(parents=True, exist_ok=True)
(out / "word2vec.json").write_text(json.dumps({"corpus": "synthetic", "speed": rows}, indent=2) + "\n")
(out / "word2vec.md").write_text(bench.markdown(rows, []))
