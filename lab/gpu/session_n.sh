#!/usr/bin/env bash
# Session N (H100): base and head in one process (ab_process = "shared", perfgate/ab/shared.py) against the
# 12 us add's process offset (issue 18). Two device calls, each under the 600 s limit:
#   bash lab/gpu/session_n.sh accuracy "--process shared --aa-runs 2 --inject-runs 2 --budget-s 430"
#   bash lab/gpu/session_n.sh accuracy "--process shared --names small_add --aa-runs 8 --inject-runs 6 --budget-s 450"
#   (the second and later calls: --fixed-spin, a spin of fixed cycles: ab_cases/test_ab_accuracy.py)
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_n.sh WHAT "ARGS"
set -u
. lab/gpu/phases.sh
nvidia-smi --query-gpu=name,driver_version,utilization.gpu,memory.used --format=csv,noheader | tee "$R/gpu.txt"
case "$1" in
  accuracy) phase accuracy 590 python3 lab/gpu/ab_accuracy.py $2; cat "$OUT/ab_accuracy.md" ;;
esac
grep -rh "one process\|a process per tree" /tmp/perfgate-ab-lab/logs 2>/dev/null | sort | uniq -c | head -3
tail -3 "$R/steps.log"
