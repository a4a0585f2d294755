#!/usr/bin/env bash
# Session K (H100): A/B mode after moving inputs every round, taming wild rounds and pooling the stages
# (issue 18). 1. ab_noise_probe.py: two A/A runs of 60 rounds of 20 ms with the round trace;
# 2. ab_accuracy.py, one A/A and one injected run (the full table is session L).
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_k.sh
set -u
. lab/gpu/phases.sh
phase noise 300 python3 lab/gpu/ab_noise_probe.py --variants 20:60,20:60 --budget-s 200
tail -4 "$R/noise.log"
cp /tmp/perfgate-ab-lab/logs/ab_noise_probe/*.json "$R/" 2>/dev/null
phase accuracy 290 python3 lab/gpu/ab_accuracy.py --aa-runs 1 --inject-runs 1 --budget-s 150
cat "$OUT/ab_accuracy.md" 2>/dev/null
[ "${PHASES_TAR:-1}" = 1 ] && tar cf "$OUT/results.tar" -C "$(dirname "$R")" "$(basename "$R")"
