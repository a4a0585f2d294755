#!/usr/bin/env bash
# H100 session F (issue 17): raw processes for the new decision rule's accuracy: 24 calibration processes
# (4 independent calibrations of 6), 4 processes at each injected level (3%, 5%), up to 16 A/A processes;
# scored on the GPU box and again here with `python scripts/accuracy.py report OUT/f/acc`.
#   source .device-env/setup.sh && bash lab/gpu/session_f.sh
set -uo pipefail
R=${OUT:-gpu-results}/f
source lab/gpu/phases.sh
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
nvidia-smi -L > "$R/gpu.txt" 2>&1
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv >> "$R/gpu.txt" 2>&1
phase accuracy 570 python3 scripts/accuracy.py run gpu "$R/acc" --calibration-runs 24 --inject-runs 4 \
  --aa-runs 16 --levels 3,5 --deadline-s 470
tar czf "$OUT/f.tgz" -C "$OUT" f && rm -f "$OUT/results.tar"
