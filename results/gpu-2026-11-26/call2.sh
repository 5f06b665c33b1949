#!/usr/bin/env bash
# Device call 2 (it ran on the lent H200), one after the other so that no timing shares the machine:
#   1. bigvocab's full against Liger Kernel's and Cut Cross-Entropy's fused linear cross-entropy;
#   2. the speed half of `bigvocab bench --full` on the GPU (bench_speed.py: V = 10k, 100k, 1M; N = 1024);
#   3. the test suite with CUDA available, one line per test so that a cut-off run still names
#      its failures.
# Needs .carry/whl (Liger Kernel, Cut Cross-Entropy wheels). Each step has its own time limit.
set -u
source results/gpu-2026-11-26/device_env.sh
start=$(date +%s)
here=results/gpu-2026-11-26

timeout "${PEERS_LIMIT:-75}" python3 $here/fused_ce_peers.py --repeats 5 --out "$OUT/fused_ce_peers.json" \
  >"$OUT/fused_ce_peers.log" 2>&1
echo "peers rc=$? at $(( $(date +%s) - start )) s"; grep "^|" "$OUT/fused_ce_peers.log"

timeout "${BENCH_LIMIT:-190}" python3 $here/bench_speed.py cuda /tmp/bench-cuda 10k,100k,1M >"$OUT/bench.log" 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; tail -45 "$OUT/bench.log"
tar czf "$OUT/bench-cuda.tgz" -C /tmp bench-cuda 2>/dev/null

timeout "${TEST_LIMIT:-150}" python3 -m pytest -n 12 -p no:cacheprovider --timeout 120 -o addopts= -v --tb=short \
  -rfE tests >"$OUT/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - start )) s"
grep -E "^(FAILED|ERROR)|FAILED tests|ERROR tests" "$OUT/pytest.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort -u | head -60
tail -3 "$OUT/pytest.log"
