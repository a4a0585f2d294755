#!/usr/bin/env bash
# Update the committed H100 baseline on purpose (after the rms_norm/fused_add_gelu changes), then one
# profiled gate run with charts against it.   source .device-env/setup.sh && bash lab/gpu/h100_final.sh
set -uo pipefail
OUT=${OUT:-gpu-results}; mkdir -p "$OUT"; W=/tmp/perfgate-final; mkdir -p "$W"
export PYTHONUNBUFFERED=1
R=$OUT/r
source lab/gpu/phases.sh
( python3 -c "import torch, kernels; kernels.rms_norm(torch.ones(4, 8, device='cuda'), torch.ones(8, device='cuda'))" \
  > /tmp/rms_build.log 2>&1 ) &
phase update_baseline 200 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-no-store \
  --perfgate-update-baseline --perfgate-reason "rms_norm: 16-byte vector accesses; fused_add_gelu: 2-D grid"
cp baselines/nvidia-h100-80gb-hbm3.json "$OUT/"
phase profiled 150 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-db "$W/h.db" \
  -k "vector_add or (softmax and bf16) or matmul or rms_norm" --perfgate-profile nsys,ncu \
  --perfgate-report-dir "$W/report" --perfgate-summary "$OUT/profiled.md" --perfgate-json "$W/profiled.json"
tar czf "$OUT/report.tgz" -C "$W" --exclude=profiles report profiled.json
wait
