#!/usr/bin/env bash
# The H100 evidence run for the gate spine and the kernel suite (issues 2 and 3), as run through the
# device tool:  source .device-env/setup.sh && bash scripts/h100_gate_demo.sh
# Writes logs and results under $OUT (default ./gpu-results) and packs them into one tarball.
set -uo pipefail
OUT=${OUT:-gpu-results}
R=$OUT/r; mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "== $(date +%T) $*" | tee -a "$R/steps.log"; }
phase() { local name=$1; shift; local t0=$SECONDS; "$@" >"$R/$name.log" 2>&1; local rc=$?
          echo "$name rc=$rc wall=$((SECONDS - t0)) s" | tee -a "$R/steps.log"; return 0; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)" >> "$R/gpu.txt"
BD=$R/baselines; DB=$R/history.db
PG=(python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-db "$DB" --perfgate-baseline-dir "$BD")
log correctness;  phase correctness python3 -m pytest -p no:cacheprovider -q kernels/tests/test_correctness.py
log baseline;     phase gate1_baseline "${PG[@]}" --perfgate-json "$R/gate1.json" --perfgate-summary "$R/gate1.md"
log rerun;        phase gate2_rerun "${PG[@]}" --perfgate-json "$R/gate2.json" --perfgate-summary "$R/gate2.md"
log detuned;      KERNELS_DETUNE=vector_add,softmax phase gate3_detuned "${PG[@]}" --perfgate-json "$R/gate3.json" --perfgate-summary "$R/gate3.md"
grep -h "rc=" "$R/steps.log"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
