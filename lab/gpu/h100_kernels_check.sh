#!/usr/bin/env bash
# Compiled correctness of the whole kernel suite, then the gate against the committed H100 baseline.
#   source .device-env/setup.sh && bash lab/gpu/h100_kernels_check.sh
set -uo pipefail
OUT=${OUT:-gpu-results}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
R=$OUT/r
source lab/gpu/phases.sh
# the CUDA extension builds in the background while the Triton tests run
( python3 -c "import torch, kernels; kernels.rms_norm(torch.ones(4, 8, device='cuda'), torch.ones(8, device='cuda'))" \
  > /tmp/rms_build.log 2>&1 ) &
phase correctness 150 python3 -m pytest -p no:cacheprovider -q -rfE --tb=short kernels/tests/test_correctness.py
phase gate 200 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-no-store \
  --perfgate-json "$OUT/gate.json" --perfgate-summary "$OUT/gate.md"
wait
