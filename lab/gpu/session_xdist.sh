#!/usr/bin/env bash
# Two GPUs, one gate (issue 10): the bundled suite once on one GPU (baseline), again on one GPU, then with
# `-n 2`: both GPUs used (cases carry their GPU's UUID), verdicts equal, wall times.
#   source .device-env/setup.sh && bash lab/gpu/session_xdist.sh     (nvidia-h200-x2)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/x
source "$here/lib/phases.sh"
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
PG=(python3 -m pytest -q -p no:cacheprovider kernels/tests/test_perf.py --perfgate --perfgate-baseline-dir "$R/bl"
    --perfgate-db "$R/history.db")
nvidia-smi -L > "$R/gpus.txt" 2>&1
phase single_baseline 360 "${PG[@]}" --perfgate-json "$R/single0.json"
phase single 200 "${PG[@]}" --perfgate-json "$R/single.json"
phase xdist 200 "${PG[@]}" -n 2 --perfgate-json "$R/xdist.json"
phase check 30 python3 lab/gpu/xdist_check.py "$R/single.json" "$R/xdist.json"
tar czf "$OUT/x.tgz" -C "$OUT" x && rm -f "$OUT/results.tar"
