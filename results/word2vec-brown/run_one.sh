#!/bin/bash
# usage: [DATA=../shared/data] [RUNS=runs/w2v] [TAG=x] run_one.sh MODEL OUTPUT [extra train args...]
# Trains MODEL (skipgram|cbow) with OUTPUT (neg|hsm) on Brown with gensim's defaults, then scores the
# final vectors on WordSim-353, SimLex-999 and the analogies; writes RUNS/MODEL-OUTPUT[-TAG]{,.log}.
set -e
model=$1; output=$2; shift 2
data=${DATA:-../shared/data}; runs=${RUNS:-runs/w2v}
name=$model-$output${TAG:+-$TAG}
mkdir -p "$runs"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cmd=(bigvocab train --model "$model" --output "$output" --corpus "brown:$data/brown" --skip-perplexity --no-progress
     --out "$runs/$name" --overwrite "$@")
echo "\$ ${cmd[*]}" > "$runs/$name.log"
start=$(date +%s.%N)
nice "${cmd[@]}" >> "$runs/$name.log" 2>&1
end=$(date +%s.%N)
echo "wall_s $(echo "$end - $start" | bc)" >> "$runs/$name.log"
ecmd=(bigvocab eval --checkpoint "$runs/$name/last.pt" --skip-perplexity --no-progress
      --analogy "$data/eval/questions-words.txt" --similarity "$data/eval/wordsim353.tsv"
      --similarity "$data/eval/simlex999.txt")
echo "\$ ${ecmd[*]}" >> "$runs/$name.log"
nice "${ecmd[@]}" >> "$runs/$name.log" 2>&1
