#!/usr/bin/env bash
# Session J (H100): where A/B mode's remaining noise comes from (issue 18).
#   1. placement_probe.py in 3 fresh processes: does a case's time depend on where its inputs sit?
#   2. ab_noise_probe.py: A/A runs with the round trace, rounds of 40 ms and of 10 ms.
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_j.sh
set -u
. lab/gpu/phases.sh
for i in 1 2 3; do
  phase "placement_$i" 150 python3 lab/gpu/placement_probe.py "$R/placement_$i.json" --seed "$i"
done
grep -h "placement-probe" "$R"/placement_*.log
phase noise 400 python3 lab/gpu/ab_noise_probe.py --budget-s 250
tail -5 "$R/noise.log"
cp /tmp/perfgate-ab-lab/logs/ab_noise_probe/*.json "$R/" 2>/dev/null
[ "${PHASES_TAR:-1}" = 1 ] && tar cf "$OUT/results.tar" -C "$(dirname "$R")" "$(basename "$R")"
