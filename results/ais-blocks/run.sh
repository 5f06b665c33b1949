#!/usr/bin/env bash
# ais before/after, side by side on one machine: two alternating pairs of speed runs (full and both
# ais variants at V = 10k and 100k, N = 1024, one thread), each side importing its own source tree.
#   results/ais-blocks/run.sh BEFORE_SRC AFTER_SRC OUT
# e.g. git worktree add /tmp/before 3cb8bae; results/ais-blocks/run.sh /tmp/before/src src /tmp/ais
set -euo pipefail
before=$1 after=$2 out=$3
mkdir -p "$out"
for i in 1 2; do
  for side in before after; do
    src=$before
    [[ $side == after ]] && src=$after
    PYTHONPATH=$src OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -c "import sys; from bigvocab.cli import main; sys.exit(main())" \
      bench --skip-quality --outputs 'full,ais*' --vocab-sizes 10k,100k --batch 1024 --no-progress \
      --out "$out/$side-$i" >"$out/$side-$i.log" 2>&1
  done
done
