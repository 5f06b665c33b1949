#!/usr/bin/env bash
# Device call 1 (a lent H100): the test suite with CUDA available, beside the Brown seeds that
# issue 12 lacks, trained on the GPU with the protocol of results/brown-nnlm/run.sh.
# Needs .carry/brown (the shared Brown copy) and .carry/whl (Liger Kernel, Cut Cross-Entropy).
# Usage on the device machine, from the repository root: bash results/gpu-2026-11-26/call1.sh
set -u
source results/gpu-2026-11-26/device_env.sh
{
  nvidia-smi -L; nproc; free -g | head -2
  python3 -c "import torch, numpy, numba, tqdm; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'numpy', numpy.__version__, 'numba', numba.__version__, torch.cuda.get_device_name())"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

runs=/tmp/runs
mkdir -p $runs
export BIGVOCAB="python3 -m bigvocab.cli"
pids=()
launch() {  # NAME SEED MODEL [options]
  timeout "${BROWN_LIMIT:-400}" results/brown-nnlm/run.sh .carry/brown $runs --one "$@" --device cuda &
  pids+=($!)
}
for s in 1 2; do launch lstm-full $s lstm --output full; launch lstm-sampled $s lstm --output sampled; done
launch lstm-adaptive 2 lstm --output adaptive
for s in 0 1 2; do launch lstm-nce $s lstm --output nce; launch lstm-selfnorm $s lstm --output selfnorm; done
launch char 2 nnlm --output char
launch cnn 2 nnlm --output cnn
started=$(date +%s)

set -o pipefail
timeout "${TEST_LIMIT:-270}" python3 -m pytest -n 3 -p no:cacheprovider --timeout 200 -q -rfE tests \
  2>&1 | tee "$OUT/pytest.log" | tail -40
echo "pytest rc=$? after $(( $(date +%s) - started )) s"
wait "${pids[@]}"
echo "brown runs done after $(( $(date +%s) - started )) s"
tail -n 2 $runs/*.log
tar czf "$OUT/brown-runs.tgz" --exclude='*.pt' -C $runs .
