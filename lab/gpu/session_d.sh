#!/usr/bin/env bash
# H100, final: the GPU tests on the final code, then the composite action run step by step twice with a
# runner-local tool cache (cold: compile and autotune; warm: the cache kept), strict, against the
# committed calibrated baseline.
#   source .device-env/setup.sh && bash lab/gpu/session_d.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/d
source "$here/lib/phases.sh"
unset TRITON_CACHE_DIR PERFGATE_KERNEL_CACHE PERFGATE_DB
nvidia-smi -L > "$R/gpu.txt" 2>&1
phase gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests
phase action_cold 300 python3 scripts/run_action.py "$R/runner"
phase action_warm 150 python3 scripts/run_action.py "$R/runner"
cp -r "$R"/runner/temp/perfgate-results-* "$R/results" 2>/dev/null
rm -rf "$R/runner/tool-cache/perfgate/o/r/cache" "$R/runner/temp"
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -f "$OUT/results.tar"
