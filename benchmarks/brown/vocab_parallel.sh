#!/usr/bin/env bash
# The Brown NNLM of benchmarks/brown, vocabulary parallel on 2 local processes and in one process,
# with the same options; one output layer per call.
#
#   benchmarks/brown/vocab_parallel.sh BROWN_DIR RUNS_DIR OUTPUT STEPS [vp2|one|both]
#
# STEPS: a step cap, or "protocol" for the whole Brown protocol (8 epochs, patience 1).
# CORPUS overrides the corpus spec (default brown-bengio:BROWN_DIR), e.g. a tiny synthetic one.
# Each run's last console line (its exact test perplexity) is printed; the logs are RUNS_DIR/*.log.
set -euo pipefail
brown=$1 runs=$2 output=$3 steps=$4 which=${5:-both}
corpus=${CORPUS:-brown-bengio:$brown}
mkdir -p "$runs"
options=(--model nnlm --corpus "$corpus" --output "$output"
  --context 4 --hidden-dim 100 --embedding-dim 30 --no-direct
  --optimizer adam --lr 0.002 --batch-size 256 --no-progress --overwrite)
if [[ $steps == protocol ]]; then
  options+=(--epochs 8 --patience 1)
else
  options+=(--epochs 1 --max-steps "$steps")
fi
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python=${PYTHON:-python}
if [[ $which != one ]]; then
  "$python" -m torch.distributed.run --standalone --nproc_per_node 2 -m bigvocab.cli train "${options[@]}" \
    --vocab-parallel --out "$runs/vp2-$output" >"$runs/vp2-$output.log" 2>&1
  tail -1 "$runs/vp2-$output.log"
fi
if [[ $which != vp2 ]]; then
  "$python" -m bigvocab.cli train "${options[@]}" --out "$runs/one-$output" >"$runs/one-$output.log" 2>&1
  tail -1 "$runs/one-$output.log"
fi
