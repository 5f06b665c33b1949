"""The quality half of ``bench --full`` (its preset as committed) on one synthetic language.

    python results/quality-full-preset/run_one_language.py OUT [OUTPUT_PATTERNS] [10000|100000]

Runs ``BenchConfig.full``'s quality runs -- the same model, language, optimiser and wall-clock
budget per layer -- on the language of the given V (default 10,000) without the speed rows, the
other language and the word2vec rows, which together last hours: a check of the preset's curves
that fits a session. Writes the bench's report, JSON and plots to OUT.
"""

import sys
from pathlib import Path

from bigvocab.bench import runner
from bigvocab.bench.config import BenchConfig, parse_patterns

out = Path(sys.argv[1])
outputs = parse_patterns(sys.argv[2]) if len(sys.argv) > 2 else None
vocab = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
every_task = runner.quality_tasks
runner.quality_tasks = lambda config: [t for t in every_task(config) if t.name == f"synthetic V={vocab}"]
config = BenchConfig.full(out=out, outputs=outputs, skip_speed=True, word2vec=False, progress=False)
results = runner.run_bench(config, stream=sys.stdout)
print(f"wall {results['wall_seconds']:.0f} s")
