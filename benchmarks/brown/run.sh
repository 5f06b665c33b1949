#!/usr/bin/env bash
# Bengio et al.'s (2003) Brown protocol, one run per output layer and seed, and the table.
#
# The whole table, every row of rows.txt for seeds 0 1 2 (runs already finished are kept):
#   results/brown-nnlm/run.sh BROWN_DIR RUNS_DIR
# Some rows and seeds (ROWS: names from rows.txt; SEEDS: a list):
#   ROWS="full target nce" SEEDS="0 1" results/brown-nnlm/run.sh ../shared/data/brown runs
# One run with any extra options (written to RUNS_DIR/brown-nnlm-NAME-sSEED):
#   results/brown-nnlm/run.sh BROWN_DIR RUNS_DIR --one NAME SEED MODEL [bigvocab train options...]
# The table (mean ± std over the seeds found) goes to RUNS_DIR/table.md and stdout.
# Every run of a model has the same data, optimiser, epochs and stopping rule; only the output
# layer differs. Runs use one thread (OMP_NUM_THREADS=1); BIGVOCAB overrides the command.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
brown=$1 runs=$2
shift 2
bigvocab=${BIGVOCAB:-bigvocab}
python=${PYTHON:-python}

protocol() {  # the model's options, identical for every output layer
  case $1 in
    nnlm) echo "--model nnlm --context 4 --hidden-dim 100 --embedding-dim 30 --no-direct --batch-size 256" ;;
    lstm) echo "--model lstm --layers 2 --hidden-dim 200 --embedding-dim 200 --dropout 0.2 --bptt 35 --batch-size 20 --clip-norm 5" ;;
    *) echo "unknown model '$1' (nnlm or lstm)" >&2; exit 2 ;;
  esac
}

one() {  # NAME SEED MODEL [options...]
  local name=$1 seed=$2 model=$3
  shift 3
  local out="$runs/brown-nnlm-$name-s$seed"
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $bigvocab train $(protocol "$model") --corpus "brown-bengio:$brown" \
    --optimizer adam --lr 0.002 --epochs 8 --patience 1 --seed "$seed" \
    --no-progress --out "$out" --overwrite "$@" >"$out.log" 2>&1
  tail -1 "$out.log"
}

mkdir -p "$runs"
if [[ ${1:-} == --one ]]; then
  shift
  one "$@"
  exit
fi
names=()
while read -r name model options; do
  [[ -z $name || $name == \#* ]] && continue
  if [[ -n ${ROWS:-} && " $ROWS " != *" $name "* ]]; then continue; fi
  names+=("$name")
  for seed in ${SEEDS:-0 1 2}; do
    [[ -f "$runs/brown-nnlm-$name-s$seed/summary.json" ]] && continue
    echo "== $name seed $seed"
    # shellcheck disable=SC2086
    one "$name" "$seed" "$model" ${options//\{runs\}/$runs} || echo "== $name seed $seed failed: see its .log"
  done
done <"$here/rows.txt"
$python "$here/collect.py" "$runs" "${names[@]}" | tee "$runs/table.md"
