#!/usr/bin/env bash
# The Brown NNLM of benchmarks/brown trained on 2 local processes with each way of combining them
# (gradients averaged every step, local SGD, elastic averaging SGD) and in one process with the
# same per-process batch; prints a table of the runs' exact test perplexities and times.
#
#   benchmarks/brown/parallel_sgd.sh BROWN_DIR RUNS_DIR [STEPS]
#
# STEPS caps each run (default: the whole protocol, 8 epochs with patience 1).
# CORPUS overrides the corpus spec (default brown-bengio:BROWN_DIR); EVERY the averaging period (8).
set -euo pipefail
brown=$1 runs=$2 steps=${3:-protocol}
corpus=${CORPUS:-brown-bengio:$brown}
python=${PYTHON:-python}
mkdir -p "$runs"
options=(train --model nnlm --corpus "$corpus" --output full --context 4 --hidden-dim 100 --embedding-dim 30
  --no-direct --optimizer adam --lr 0.002 --batch-size 256 --no-progress --overwrite)
if [[ $steps == protocol ]]; then options+=(--epochs 8 --patience 1); else options+=(--epochs 1 --max-steps "$steps"); fi
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for method in gradients local-sgd easgd; do
  "$python" -m torch.distributed.run --standalone --nproc_per_node 2 -m bigvocab.cli "${options[@]}" \
    --averaging "$method" --average-every "${EVERY:-8}" --out "$runs/$method" >"$runs/$method.log" 2>&1
done
"$python" -m bigvocab.cli "${options[@]}" --out "$runs/one" >"$runs/one.log" 2>&1
"$python" - "$runs" <<'PY'
import json, sys
from pathlib import Path
runs = Path(sys.argv[1])
print("| run | processes | test ppl | best valid ppl (epoch) | steps | train s |")
print("|---|---|---|---|---|---|")
for name, processes in (("gradients", 2), ("local-sgd", 2), ("easgd", 2), ("one", 1)):
    s = json.loads((runs / name / "summary.json").read_text())
    valid = f"{s['best_valid_ppl']:.1f} ({s['best_epoch']})" if s["best_valid_ppl"] else "n/a"
    print(f"| {name} | {processes} | {s['test_ppl']:.2f} | {valid} | {s['steps']} | {s['train_seconds']:.0f} |")
PY
