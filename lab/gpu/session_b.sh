#!/usr/bin/env bash
# H100 accuracy experiment (issue 9): calibration, injected slowdowns, A/A trials, scored now vs before.
#   source .device-env/setup.sh && bash lab/gpu/session_b.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/b
source "$here/lib/phases.sh"
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
phase accuracy 570 python3 scripts/accuracy.py run gpu "$R/acc" --calibration-runs 6 --inject-runs 6 \
  --aa-runs 25 --levels 2,3,5,10 --deadline-s 450
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -f "$OUT/results.tar"
