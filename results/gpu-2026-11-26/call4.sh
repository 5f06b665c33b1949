#!/usr/bin/env bash
# Device call 4 (the second lease's second call, about 4 minutes of the 6 left): the speed rows
# of bench --full at V = 10k and 100k on the H100 with the CUDA chunk budget, so that with call 3's
# V = 1M rows one card has all three sizes; then the index tests, which now skip a kind whose
# library (faiss, hnswlib: the optional ann extra, not installed there) is missing.
#   bash results/gpu-2026-11-26/call4.sh
set -u
source results/gpu-2026-11-26/device_env.sh
here=results/gpu-2026-11-26
start=$(date +%s)

timeout "${BENCH_LIMIT:-170}" python3 $here/bench_speed.py cuda /tmp/bench-small 10k,100k >"$OUT/bench-10k-100k.log" 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; tail -40 "$OUT/bench-10k-100k.log"
tar czf "$OUT/bench-10k-100k.tgz" -C /tmp bench-small 2>/dev/null

timeout "${TEST_LIMIT:-30}" python3 -m pytest -n 8 -p no:cacheprovider -o addopts= -q -rs tests/index >"$OUT/pytest-index.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - start )) s"; tail -12 "$OUT/pytest-index.log"
