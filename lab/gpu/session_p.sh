#!/usr/bin/env bash
# Session P (H100, issue 30's pipeline work): what A/B costs per phase on the GPU now that the fresh pair runs
# the called cases' tests alone, in a run with regressions (the "inject" head: 1-3% slowdowns) and an A/A
# run, shared process. Before: a run with regressions spent 58-76 s of its 119-153 s in the fresh pair.
# One device call, under the 600 s limit:
#   source .device-env/setup.sh && bash lab/gpu/session_p.sh
# Prints each run's `perfgate: A/B cost:` line (phases adding up to the total), how many cases each fresh pair
# re-measured and how many tests it ran, and the accuracy table (whose numbers must stay as session N's).
set -u
. lab/gpu/phases.sh
nvidia-smi --query-gpu=name,driver_version,utilization.gpu,memory.used --format=csv,noheader | tee "$R/gpu.txt"
phase accuracy 560 python3 lab/gpu/ab_accuracy.py --process shared --aa-runs 1 --inject-runs 1 --budget-s 420
cat "$OUT/ab_accuracy.md" 2>/dev/null
echo "--- per run: the fresh pair and the cost line"
grep -rh "called: measured again\|perfgate: A/B cost:" "$(python3 -c "import tempfile; print(tempfile.gettempdir())")/perfgate-ab-lab/logs" 2>/dev/null
tail -3 "$R/steps.log"
