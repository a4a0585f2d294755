#!/usr/bin/env bash
# The H100 evidence run for the gate spine, the kernel suite and run-to-run noise (issues 2, 3), as run
# through the device tool:   source .device-env/setup.sh && bash lab/gpu/h100_gate_demo.sh
# Every phase has its own time limit and appends its logs to $OUT/results.tar as soon as it ends, so a
# run cut short still returns what it finished.
set -uo pipefail
OUT=${OUT:-gpu-results}
R=$OUT/r; mkdir -p "$R"
export PYTHONUNBUFFERED=1
source lab/gpu/phases.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)" >> "$R/gpu.txt"
# the CUDA C++ extension compiles in the background while the Triton cases run (the build is locked,
# so the rms_norm case simply waits for it)
( t0=$SECONDS; python3 -c "import torch, kernels; kernels.rms_norm(torch.ones(4, 8, device='cuda'), torch.ones(8, device='cuda'))" \
  > "$R/rms_build.log" 2>&1; echo "rms_norm build rc=$? wall=$((SECONDS - t0)) s" >> "$R/rms_build.log" ) &
BD=$R/baselines; DB=$R/history.db
PG=(python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-db "$DB" --perfgate-baseline-dir "$BD")
phase gate1_baseline 240 "${PG[@]}" --perfgate-json "$R/gate1.json" --perfgate-summary "$R/gate1.md"
phase gate2_rerun 120 "${PG[@]}" --perfgate-json "$R/gate2.json" --perfgate-summary "$R/gate2.md"
KERNELS_DETUNE=vector_add,softmax phase gate3_detuned 120 "${PG[@]}" -k "vector_add or softmax" \
  --perfgate-json "$R/gate3.json" --perfgate-summary "$R/gate3.md"
for i in 1 2 3 4 5; do   # run-to-run noise: the same cases in 5 separate processes
  phase noise$i 40 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py \
    -k "triton and (vector_add or softmax or layer_norm) or copy" --perfgate --perfgate-no-store \
    --perfgate-baseline-dir "$R/noise_bl" --perfgate-json "$R/noise$i.json"
done
phase correctness 200 python3 -m pytest -p no:cacheprovider -q -rfE --tb=line kernels/tests/test_correctness.py
wait
tar rf "$OUT/results.tar" -C "$OUT" r 2>/dev/null
