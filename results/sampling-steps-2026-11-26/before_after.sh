# Before (591448f, unpacked by: mkdir /tmp/src_591 && git archive 591448f src | tar -x -C /tmp/src_591) and after
# (this checkout), alternating processes, V = 1M; from the repository root:
#   ROUNDS="1 2" bash results/sampling-steps-2026-11-26/before_after.sh THREADS
T=$1
for r in ${ROUNDS:-1 2}; do for spec in "nce {}" "neg {}" "hsm {\"tree\":\"balanced\"}" "sampled {}"; do set -- $spec; for v in /tmp/src_591/src src; do echo -n "$(basename $(dirname $v)) "; PYTHONPATH=$v python results/sampling-steps-2026-11-26/step_time.py $1 1000000 $T "$2"; done; done; done
