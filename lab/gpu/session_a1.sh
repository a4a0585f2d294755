#!/usr/bin/env bash
# H100 evidence, part 1: the GPU tests, the gate cold vs warm caches, calibration of the bundled suite, the
# gate on the calibrated baseline.   source .device-env/setup.sh && bash lab/gpu/session_a1.sh
# Caches live in /tmp/perfgate-cache, which part 2 (gpu_session_a2.sh) reuses while the machine is warm.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/a1
source "$here/lib/phases.sh"
CACHE=/tmp/perfgate-cache
PG=(python3 -m pytest -q -p no:cacheprovider kernels/tests/test_perf.py --perfgate)
{ nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)"
  python3 -m perfgate.cli --version; } > "$R/gpu.txt" 2>&1
phase gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py
rm -rf "$CACHE"
export TRITON_CACHE_DIR=$CACHE/triton PERFGATE_KERNEL_CACHE=$CACHE/kernels
phase cold 330 "${PG[@]}" --perfgate-no-store --perfgate-baseline-dir "$R/bl_cache" --perfgate-json "$R/cold.json"
phase warm 150 "${PG[@]}" --perfgate-no-store --perfgate-baseline-dir "$R/bl_cache" --perfgate-json "$R/warm.json"
phase calibrate 420 python3 -m perfgate.cli calibrate --runs 6 --replace --db "$R/history.db" \
  --reason "H100, power protocol and speedups against torch: 6 fresh processes" -- -p no:cacheprovider kernels/tests/test_perf.py
cp baselines/nvidia-h100-80gb-hbm3.json "$R/" 2>/dev/null
phase gate 180 "${PG[@]}" --perfgate-db "$R/history.db" --perfgate-json "$R/gate.json" \
  --perfgate-summary "$R/gate.md" --perfgate-report-dir "$R/report"
tar czf "$OUT/a1.tgz" -C "$OUT" a1 && rm -f "$OUT/results.tar"
