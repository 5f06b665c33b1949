#!/usr/bin/env bash
# A V = 1M bench training step at two threads, before (BEFORE_SRC: fresh threads per kernel call,
# equal row counts) and after (this checkout's src), alternating processes, two rounds.
#   git worktree add /tmp/wt-before bfc65f4
#   BEFORE_SRC=/tmp/wt-before/src bash results/kernel-threads/before_after.sh
set -euo pipefail
step=results/sampling-steps-2026-11-26/step_time.py
for round in 1 2; do
  for layer in "hsm {\"tree\":\"balanced\"}" "nce {}" "neg {}" "sampled {}"; do
    set -- $layer
    echo "round $round $1 before: $(PYTHONPATH=$BEFORE_SRC python $step $1 1000000 2 "$2")"
    echo "round $round $1 after:  $(PYTHONPATH=src python $step $1 1000000 2 "$2")"
  done
done
