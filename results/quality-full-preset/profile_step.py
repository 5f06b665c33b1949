"""Where a quality-run training step goes: the bench's NNLM, language and Adagrad, one layer, ten
profiled steps after five warm-up steps.

    python results/quality-full-preset/profile_step.py V OUTPUT_PATTERN
"""
import dataclasses, sys, time, torch
from bigvocab.bench import quality as q
from bigvocab.bench.config import BenchConfig, parse_patterns
from bigvocab.bench.rows import CurvePoint
from bigvocab.bench.runner import select_candidates, quality_tasks

vocab, pattern = int(sys.argv[1]), sys.argv[2]
config = BenchConfig.full(out=None, skip_speed=True, word2vec=False, progress=False)
task = [t for t in quality_tasks(config) if t.name == f"synthetic V={vocab}"][0]

def profiled(trainer, seconds, checkpoints, evaluate):
    trainer.config = dataclasses.replace(trainer.config, max_steps=5); trainer.fit()
    start = time.perf_counter()
    with torch.profiler.profile() as prof:
        trainer.config = dataclasses.replace(trainer.config, max_steps=15); trainer.fit()
    took = time.perf_counter() - start
    print(f"{pattern} V={vocab}: {took / 10 * 1e3:.1f} ms a step (profiled)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))
    return [CurvePoint(seconds, took, trainer.tokens, trainer.step, 1.0)]

q.train_on_budget = profiled
rows = q.run_quality_task(task, select_candidates(parse_patterns(pattern)), config, lambda r: print(r.status, r.error))
