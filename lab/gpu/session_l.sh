#!/usr/bin/env bash
# Session L (H100): A/B mode's false alarms, detection and cost after session K's changes plus the fresh
# pair of processes (issue 18). Two device calls (each under the 600 s limit):
#   bash lab/gpu/session_l.sh accuracy "--aa-runs 3 --inject-runs 1 --budget-s 330"
#   bash lab/gpu/session_l.sh accuracy "--aa-runs 1 --inject-runs 2 --budget-s 260"  (then: cost)
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_l.sh WHAT "ARGS"
set -u
. lab/gpu/phases.sh
case "$1" in
  accuracy) phase accuracy 590 python3 lab/gpu/ab_accuracy.py $2; cat "$OUT/ab_accuracy.md" ;;
  cost) phase cost 590 python3 lab/gpu/ab_cost.py $2; cat "$OUT/ab_cost.md" ;;
esac
tail -3 "$R/steps.log"
