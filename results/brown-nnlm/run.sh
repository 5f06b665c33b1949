#!/usr/bin/env bash
# Bengio et al.'s (2003) Brown protocol with the NNLM, one run per output layer.
# Usage: results/brown-nnlm/run.sh BROWN_DIR RUNS_DIR NAME [extra bigvocab train options...]
# e.g.   results/brown-nnlm/run.sh ../shared/data/brown runs hsm-huffman --output hsm --tree huffman
# Every run is the same model, data, optimiser and stopping rule; only the output layer differs.
set -euo pipefail
brown=$1 runs=$2 name=$3
shift 3
mkdir -p "$runs"
OMP_NUM_THREADS=1 bigvocab train --model nnlm --corpus "brown-bengio:$brown" \
  --context 4 --hidden-dim 100 --embedding-dim 30 --no-direct \
  --optimizer adam --lr 0.002 --batch-size 256 --epochs 8 --patience 1 \
  --no-progress --out "$runs/brown-nnlm-$name" --overwrite "$@" >"$runs/brown-nnlm-$name.log" 2>&1
tail -1 "$runs/brown-nnlm-$name.log"
