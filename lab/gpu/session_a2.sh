#!/usr/bin/env bash
# H100 evidence, part 2: the GPU tests again, calibration of the bundled suite (time and speedup noise,
# autotune pinned), the gate on it, a real regression confirmed in fresh processes, nsys + ncu profiles
# (copy-engine case included) and analyze, a pytest-benchmark suite gated, an ncu report of 1000 launches.
#   source .device-env/setup.sh && bash lab/gpu/session_a2.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/a2
source "$here/lib/phases.sh"
CACHE=/tmp/perfgate-cache
export TRITON_CACHE_DIR=$CACHE/triton PERFGATE_KERNEL_CACHE=$CACHE/kernels
PG=(python3 -m pytest -q -p no:cacheprovider --perfgate --perfgate-db "$R/history.db")
phase gpu_tests 120 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py
phase calibrate 330 python3 -m perfgate.cli calibrate --runs 6 --replace --db "$R/history.db" \
  --reason "H100: power protocol, speedups against torch, autotune pinned; 6 fresh processes" \
  -- -p no:cacheprovider kernels/tests/test_perf.py
cp baselines/nvidia-h100-80gb-hbm3.json "$R/" 2>/dev/null
phase gate 150 "${PG[@]}" kernels/tests/test_perf.py --perfgate-json "$R/gate.json" --perfgate-summary "$R/gate.md" \
  --perfgate-report-dir "$R/report"
KERNELS_DETUNE=softmax phase detuned 200 "${PG[@]}" kernels/tests/test_perf.py -k "softmax or layer_norm" \
  --perfgate-json "$R/detuned.json" --perfgate-summary "$R/detuned.md"
phase profile 300 "${PG[@]}" kernels/tests/test_perf.py -k "copy or vector_add or softmax or matmul" \
  --perfgate-profile nsys,ncu --perfgate-report-dir "$R/profiled" --perfgate-json "$R/profiled.json" \
  --perfgate-summary "$R/profiled.md"
phase analyze 120 python3 -m perfgate.cli analyze "$R/profiled/profiles/perfgate-nsys.nsys-rep" \
  "$R/profiled/profiles/perfgate-ncu.ncu-rep" --output-dir "$R/analyze"
phase bench_first 150 "${PG[@]}" kernels/tests/test_benchmark_suite.py --perfgate-baseline-dir "$R/bl_bench" \
  --perfgate-json "$R/bench1.json"
KERNELS_DETUNE=softmax phase bench_detuned 150 "${PG[@]}" kernels/tests/test_benchmark_suite.py \
  --perfgate-baseline-dir "$R/bl_bench" --perfgate-json "$R/bench2.json" --perfgate-summary "$R/bench2.md"
phase ncu1000 150 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section Occupancy \
  --section LaunchStats -f -o "$R/ncu1000" python3 lab/gpu/record_ncu_launches.py 1000
rm -f "$R"/profiled/profiles/*.sqlite
tar czf "$OUT/a2.tgz" -C "$OUT" a2 && rm -f "$OUT/results.tar"
