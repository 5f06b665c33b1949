#!/usr/bin/env bash
# The GPU checks the first lease left unfinished, run on the second (this session's, one call of
# about 9 minutes; 15 minutes of device time in all). Needs .carry/whl (Liger Kernel and Cut
# Cross-Entropy wheels, see README.md). From the repository root on the device:
#   bash results/gpu-2026-11-26/call3.sh
# 1. the CUDA test suite, 15 workers, one line per test (a cut-off run prints no summary);
# 2. the fused cross-entropy peers at the bench's shape first, with bigvocab's full at the CUDA
#    default budget (2**28 logits: row blocks at 1M), the old one (2**24) and all logits kept (2**30);
# 3. the speed rows of bench --full at V = 1M, which the first lease did not reach.
set -u
source results/gpu-2026-11-26/device_env.sh
here=results/gpu-2026-11-26
start=$(date +%s)

timeout "${TEST_LIMIT:-160}" python3 -m pytest -n 15 -p no:cacheprovider --timeout 150 -o addopts= \
  -v --tb=short --durations=25 tests >"$OUT/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - start )) s"
grep -E "(FAILED|ERROR) tests" "$OUT/pytest.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort -u | head -30
tail -3 "$OUT/pytest.log"

timeout "${PEERS_LIMIT:-160}" python3 $here/fused_ce_peers.py --repeats 5 --out "$OUT/fused_ce_peers.json" \
  --shapes 1024x256x1000000,8192x2048x128256 --modes fp32,bf16,tf32 \
  >"$OUT/fused_ce_peers.log" 2>&1
echo "peers rc=$? at $(( $(date +%s) - start )) s"; grep "^|" "$OUT/fused_ce_peers.log"

timeout "${BENCH_LIMIT:-200}" python3 $here/bench_speed.py cuda /tmp/bench-1m 1M >"$OUT/bench-1m.log" 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; tail -30 "$OUT/bench-1m.log"
tar czf "$OUT/bench-1m.tgz" -C /tmp bench-1m 2>/dev/null
