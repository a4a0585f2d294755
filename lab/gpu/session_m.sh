#!/usr/bin/env bash
# Session M (H100): does the head-vs-base offset of the 12 us add follow which worker starts first?
# Four A/A runs with the round trace, seeds 1-4 (odd: the base worker starts first).
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_m.sh
set -u
. lab/gpu/phases.sh
phase order 400 python3 lab/gpu/ab_noise_probe.py --names small_add,copy,cublas_matmul --variants 20:30,20:30,20:30,20:30 --seeds 1,2,3,4 --budget-s 330
grep "ab-noise\|A/B gate\|fresh" "$R/order.log"
cp /tmp/perfgate-ab-lab/logs/ab_noise_probe/*.json "$R/" 2>/dev/null
[ "${PHASES_TAR:-1}" = 1 ] && tar cf "$OUT/results.tar" -C "$(dirname "$R")" "$(basename "$R")"
