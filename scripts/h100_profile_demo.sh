#!/usr/bin/env bash
# The H100 evidence run for profiling (issue 4) and noise: records test fixtures, runs the gate under
# nsys+ncu, a register-heavy variant, and 5 separate processes for run-to-run noise.
#   source .device-env/setup.sh && bash scripts/h100_profile_demo.sh
set -uo pipefail
OUT=${OUT:-gpu-results}
R=$OUT/p; mkdir -p "$R"
export PYTHONUNBUFFERED=1
phase() { local name=$1; shift; local t0=$SECONDS; "$@" >"$R/$name.log" 2>&1; local rc=$?
          echo "$name rc=$rc wall=$((SECONDS - t0)) s" | tee -a "$R/steps.log"; return 0; }
BD=$R/baselines; DB=$R/history.db
SEL=${SEL:-"vector_add or softmax or matmul or fused_add_gelu or rms_norm or layer_norm"}
PG=(python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py -k "$SEL" --perfgate --perfgate-db "$DB"
    --perfgate-baseline-dir "$BD" --perfgate-profile nsys,ncu)
phase prof1_baseline "${PG[@]}" --perfgate-report-dir "$R/rep1" --perfgate-json "$R/prof1.json" --perfgate-summary "$R/prof1.md"
KERNELS_DETUNE=matmul phase prof2_detuned "${PG[@]}" --perfgate-report-dir "$R/rep2" --perfgate-json "$R/prof2.json" --perfgate-summary "$R/prof2.md"
# fixtures for the parser tests: a small capture of this project's suite, with nsys stats / ncu CSV beside it
F=$R/fixtures; mkdir -p "$F"
cp "$R/rep1/profiles/perfgate-nsys.nsys-rep" "$R/rep1/profiles/perfgate-nsys.sqlite" "$R/rep1/profiles/perfgate-ncu.ncu-rep" "$F/" 2>/dev/null
if [ -f "$F/perfgate-nsys.nsys-rep" ]; then
  for r in cuda_gpu_kern_sum cuda_gpu_mem_time_sum nvtx_sum cuda_api_sum; do
    nsys stats --force-export=true --report $r --format csv --output "$F/stats" "$F/perfgate-nsys.nsys-rep" >>"$R/stats.log" 2>&1
  done
fi
[ -f "$F/perfgate-ncu.ncu-rep" ] && ncu --import "$F/perfgate-ncu.ncu-rep" --csv --page raw > "$F/perfgate-ncu_raw.csv" 2>>"$R/stats.log"
# run-to-run noise: the same cases in 5 separate processes
for i in 1 2 3 4 5; do
  phase noise$i python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py -k "vector_add or softmax or matmul" \
    --perfgate --perfgate-no-store --perfgate-baseline-dir "$R/noise_bl" --perfgate-json "$R/noise$i.json"
done
grep -h "rc=" "$R/steps.log"
tar czf "$OUT/profile.tgz" -C "$OUT" p && rm -rf "$R"
