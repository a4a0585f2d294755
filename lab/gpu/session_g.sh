#!/usr/bin/env bash
# H100 session G (issues 17, 23): a fresh calibration of the bundled kernel suite with the shipped rule,
# three unchanged gates and one with softmax detuned against it; the GPU-marked tests; a strict
# gate (measurement handshake with real GPU children).   source .device-env/setup.sh && bash lab/gpu/session_g.sh
set -uo pipefail
R=${OUT:-gpu-results}/g
source lab/gpu/phases.sh
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
B=/tmp/perfgate-g/baselines; DB=/tmp/perfgate-g/h.db; mkdir -p "$B"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
phase calibrate 240 python3 -m perfgate calibrate --runs 6 --reason "session g" --baseline-dir "$B" --db "$DB" \
  -- -p no:cacheprovider -q kernels/tests/test_perf.py
cp "$B"/*.json "$R/" 2>/dev/null
for i in 1 2 3; do
  phase "gate$i" 90 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate \
    --perfgate-baseline-dir "$B" --perfgate-db "$DB" --perfgate-json "$R/gate$i.json"
done
KERNELS_DETUNE=softmax phase detune 90 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py \
  --perfgate --perfgate-baseline-dir "$B" --perfgate-db "$DB" --perfgate-json "$R/detune.json"
phase gpu_tests 150 python3 -m pytest -p no:cacheprovider -q -m gpu tests -rs
phase strict_gate 90 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate --perfgate-strict \
  --perfgate-baseline-dir "$B" --perfgate-db "$DB" --perfgate-json "$R/strict.json"
for f in "$R"/*.log; do echo "== $f"; tail -4 "$f"; done
tar czf "$OUT/g.tgz" -C "$OUT" g && rm -f "$OUT/results.tar"
