#!/usr/bin/env bash
# Approximate top-10 on trained weights at V = 1M. An NNLM (2 words of context, 32-d embeddings,
# H = 128 tanh units, no direct connections) with a `sampled` output layer is trained on the
# synthetic language (1,000,000 words in 100 classes, 4M training tokens) for a fixed budget of
# STEPS batches of 512 (default 6000: about 3M tokens, a few minutes on 2 cores) with Adagrad at a
# constant 0.1; then `bigvocab bench --ann` measures every kind on its output layer, queried with
# hidden states of the test split (screening is built from the training split's).
#
#   benchmarks/ann/trained_1m.sh RUNS_DIR OUT_DIR [STEPS]
#
# CORPUS overrides the corpus spec, SAMPLES the layer's num_samples (1024), KINDS the index kinds
# (default ivf,svd,screening,faiss-ivf,lsh).
set -euo pipefail
runs=$1 out=$2 steps=${3:-6000}
corpus=${CORPUS:-synthetic:vocab_size=1000000,num_classes=100,tokens=4000000}
python=${PYTHON:-python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
"$python" -m bigvocab.cli train --model nnlm --output sampled --corpus "$corpus" --context 2 --embedding-dim 32 \
  --hidden-dim 128 --no-direct --num-samples "${SAMPLES:-1024}" --batch-size 512 --optimizer adagrad --lr 0.1 --lr-schedule none \
  --max-steps "$steps" --epochs 1 --skip-perplexity --no-progress --out "$runs" --overwrite
"$python" -m bigvocab.cli bench --ann --ann-weights "$runs/last.pt" --outputs "${KINDS:-ivf,svd,screening,faiss-ivf,lsh}" \
  --out "$out"
