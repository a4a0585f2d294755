#!/usr/bin/env bash
# The H100 evidence run for profiling (issue 4/5): the gate under nsys+ncu on part of the suite (these
# outputs are also the parser fixtures under tests/data/), NVIDIA's own readings of the same files,
# a register-heavy matmul failing the gate on profiler metrics, and `perfgate analyze` on the reports.
#   source .device-env/setup.sh && bash lab/gpu/h100_profile_demo.sh
set -uo pipefail
OUT=${OUT:-gpu-results}
R=${WORK:-/tmp/perfgate-profile-demo}; mkdir -p "$R/fx"
export PYTHONUNBUFFERED=1
PHASES_TAR=0
source lab/gpu/phases.sh
PROF=.perfgate/profiles
PG=(python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-db "$R/history.db"
    --perfgate-baseline-dir "$R/baselines" --perfgate-profile nsys,ncu)
phase prof1_baseline 200 "${PG[@]}" -k "vector_add or (softmax and bf16) or matmul" \
  --perfgate-json "$R/prof1.json" --perfgate-summary "$R/prof1.md"
cp $PROF/perfgate-nsys.nsys-rep $PROF/perfgate-nsys.sqlite $PROF/perfgate-ncu.ncu-rep "$R/fx/" 2>>"$R/steps.log"
phase nsys_stats 60 nsys stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,nvtx_sum,cuda_api_sum \
  --format csv --output "$R/fx/stats" "$R/fx/perfgate-nsys.nsys-rep"
phase ncu_csv 60 bash -c "ncu --import $R/fx/perfgate-ncu.ncu-rep --csv --page raw > $R/fx/perfgate-ncu_raw.csv"
phase analyze 60 perfgate analyze "$R/fx/perfgate-nsys.nsys-rep" "$R/fx/perfgate-ncu.ncu-rep" --output-dir "$R/analyze" --no-charts
KERNELS_DETUNE=matmul phase prof2_detuned 150 "${PG[@]}" -k "matmul" --perfgate-json "$R/prof2.json" --perfgate-summary "$R/prof2.md"
phase correctness_elementwise 90 python3 -m pytest -p no:cacheprovider -q -rfE --tb=short kernels/tests/test_correctness.py -k "vector_add or mul_add"
# one compressed archive (the device tool returns at most 8 files, 16 MiB each)
mkdir -p "$OUT" && tar czf "$OUT/profile-demo.tgz" -C "$R" . && cp "$R"/steps.log "$R"/prof2_detuned.log "$R"/prof2.md "$OUT/" 2>/dev/null; ls -la "$OUT"
