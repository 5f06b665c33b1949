"""The quality half of ``bench --full`` (its preset as committed) on the V = 10k language only.

    python results/quality-full-preset/run_small_vocab.py OUT [OUTPUT_PATTERNS]

Runs ``BenchConfig.full``'s quality runs -- the same model, language, optimiser and wall-clock
budget per layer -- without the speed rows, the V = 100k language and the word2vec rows, which
together last hours: a check of the preset's V = 10k curves that fits a session. Writes the
bench's report, JSON and plots to OUT.
"""

import sys
from pathlib import Path

from bigvocab.bench import runner
from bigvocab.bench.config import BenchConfig, parse_patterns

out = Path(sys.argv[1])
outputs = parse_patterns(sys.argv[2]) if len(sys.argv) > 2 else None
every_task = runner.quality_tasks
runner.quality_tasks = lambda config: every_task(config)[:1]  # the small-vocabulary language
config = BenchConfig.full(out=out, outputs=outputs, skip_speed=True, word2vec=False, progress=False)
results = runner.run_bench(config, stream=sys.stdout)
print(f"wall {results['wall_seconds']:.0f} s")
