#!/usr/bin/env bash
# H100, closing session: GPU tests on the final code; the strict gate on the bundled suite against the
# committed calibrated baseline, cold then warm (the cost target); a de-tuned softmax confirmed and
# failed (the confirmation's own time is printed); a profiled gate with nsys and ncu read by the
# columnar ncu reader; analyze on what it recorded.
#   source .device-env/setup.sh && bash lab/gpu/session_e.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/e
source "$here/lib/phases.sh"
unset TRITON_CACHE_DIR PERFGATE_KERNEL_CACHE PERFGATE_DB
nvidia-smi -L > "$R/gpu.txt" 2>&1
PG=(python3 -m pytest -q -p no:cacheprovider --perfgate --perfgate-strict --perfgate-db "$R/history.db")
phase gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests
phase gate_cold 330 "${PG[@]}" kernels/tests/test_perf.py --perfgate-json "$R/cold.json"
phase gate_warm 150 "${PG[@]}" kernels/tests/test_perf.py --perfgate-json "$R/warm.json" --perfgate-summary "$R/warm.md"
KERNELS_DETUNE=softmax phase detuned 200 "${PG[@]}" kernels/tests/test_perf.py -k "softmax or layer_norm" \
  --perfgate-json "$R/detuned.json" --perfgate-summary "$R/detuned.md"
phase profile 300 "${PG[@]}" kernels/tests/test_perf.py -k "copy or vector_add or softmax or matmul" \
  --perfgate-profile nsys,ncu --perfgate-report-dir "$R/profiled" --perfgate-json "$R/profiled.json" \
  --perfgate-summary "$R/profiled.md"
phase analyze 120 python3 -m perfgate.cli analyze "$R/profiled/profiles/perfgate-ncu.ncu-rep" --output-dir "$R/analyze"
rm -f "$R"/profiled/profiles/*.sqlite "$R"/profiled/profiles/*.nsys-rep
tar czf "$OUT/e.tgz" -C "$OUT" e && rm -f "$OUT/results.tar"
