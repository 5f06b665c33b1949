"""The speed half of ``bigvocab bench --full`` (its sizes, repetitions and test-time caps) without
its quality and word2vec phases, which last hours on any device: what fits a short GPU lease.

Usage: python bench_speed.py DEVICE OUT_DIR [VOCAB_SIZES (default 10k,100k,1M)] [OUTPUT_PATTERNS]
"""

import sys
from pathlib import Path

from bigvocab.bench.config import BenchConfig, parse_patterns, parse_sizes
from bigvocab.bench.report import summary_table
from bigvocab.bench.runner import run_bench

device, out = sys.argv[1], Path(sys.argv[2])
sizes = parse_sizes(sys.argv[3] if len(sys.argv) > 3 else "10k,100k,1M")
outputs = parse_patterns(sys.argv[4]) if len(sys.argv) > 4 else None
config = BenchConfig.full(
    device=device, out=out, vocab_sizes=sizes, outputs=outputs, skip_quality=True, word2vec=False, progress=False
)
results = run_bench(config, stream=sys.stdout)
print(f"\nsummary ({results['wall_seconds']:.0f} s):\n{summary_table(results)}")
for note in results.get("notes", []):
    print(f"note: {note}")
