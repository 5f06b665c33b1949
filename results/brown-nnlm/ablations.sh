#!/usr/bin/env bash
# The ablation figures of README.md (issue 12), one JSON line each, on stdout:
#   results/brown-nnlm/ablations.sh > results/brown-nnlm/ablations.jsonl
cd "$(dirname "$0")/../.."
A="nice -n 15 env OMP_NUM_THREADS=1 PYTHONPATH=src ${PYTHON:-python} results/brown-nnlm/ablate.py"
S=synthetic:vocab_size=5000,tokens=200000
$A $S full 'target:{"num_samples":256,"correction":false}' 'target:{"num_samples":256}' \
  'target-jean:{"num_samples":256,"correction":false}' 'target-jean:{"num_samples":256}' \
  'target-jean:{"num_samples":1024,"correction":false}' 'target-jean:{"num_samples":1024}' \
  'target-jean:{"num_samples":2500,"correction":false}' 'target-jean:{"num_samples":2500}'
$A $S 'nce:{"shared":true}' 'nce' 'nce:{"shared":true,"num_samples":100}' 'nce:{"num_samples":100}' \
  'nce:{"shared":true,"normaliser":"learned"}' 'nce:{"normaliser":"learned"}' 'nce:{"power":0.75}' 'nce:{"num_samples":10}'
$A $S 'infreq' 'infreq:{"gamma":0.5}' 'infreq:{"gamma":1.0}' 'infreq:{"alpha":0.5}' 'infreq:{"alpha":1.0}' 'infreq:{"alpha":0.5,"gamma":0.5}'
$A --sgd 0.5 $S full 'nce:{"shared":true}' 'nce' 'infreq' 'infreq:{"gamma":1.0}'
