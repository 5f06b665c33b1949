#!/usr/bin/env bash
# The GPU checks this lease left unfinished, sized for one call of about 9 minutes on the next
# lease (15 minutes of device time in all; a start costs about 30 s). Needs .carry/whl (Liger
# Kernel and Cut Cross-Entropy wheels, see README.md). From the repository root on the device:
#   bash results/gpu-2026-11-26/next_lease.sh
# What this lease taught: pytest -n 12 reached 96 % of the CUDA suite in 140 s and a cut-off run
# prints no summary (hence -v, one line per test); the whole speed half of bench --full needs more
# than 180 s (10k and 100k took about 130 s); Liger's default chunking costs 1.8 s a step at
# 1024 x 256 x 1M, so its default row runs last.
set -u
source results/gpu-2026-11-26/device_env.sh
here=results/gpu-2026-11-26
start=$(date +%s)

timeout "${TEST_LIMIT:-170}" python3 -m pytest -n 15 -p no:cacheprovider --timeout 150 -o addopts= \
  -v --tb=short --durations=25 tests >"$OUT/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - start )) s"
grep -E "(FAILED|ERROR) tests" "$OUT/pytest.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort -u | head -30
tail -3 "$OUT/pytest.log"

timeout "${PEERS_LIMIT:-150}" python3 $here/fused_ce_peers.py --repeats 5 --out "$OUT/fused_ce_peers.json" \
  --shapes 8192x2048x128256,1024x256x1000000 --modes bf16,tf32,fp32 \
  --impls "bigvocab full,torch linear+CE,CCE (exact, filter_eps=None),CCE (default filter),liger FLCE (chunk_mem_const=256),liger FLCE" \
  >"$OUT/fused_ce_peers.log" 2>&1
echo "peers rc=$? at $(( $(date +%s) - start )) s"; grep "^|" "$OUT/fused_ce_peers.log"

timeout "${BENCH_LIMIT:-230}" python3 $here/bench_speed.py cuda /tmp/bench-1m 1M >"$OUT/bench-1m.log" 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; tail -30 "$OUT/bench-1m.log"
tar czf "$OUT/bench-1m.tgz" -C /tmp bench-1m 2>/dev/null
