#!/usr/bin/env bash
# H100 accuracy, second session (issue 9): the eight cases again plus the two probe-referenced ones,
# levels 2/3/5, and as many A/A processes as the time allows (the A/A count reaches >= 200 comparisons
# with session B's).
#   source .device-env/setup.sh && bash lab/gpu/session_c.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-gpu-results}/c
source "$here/lib/phases.sh"
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
nvidia-smi -L > "$R/gpu.txt" 2>&1
phase accuracy 575 python3 scripts/accuracy.py run gpu "$R/acc" --calibration-runs 6 --inject-runs 4 \
  --aa-runs 40 --levels 2,3,5 --deadline-s 420
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -f "$OUT/results.tar"
