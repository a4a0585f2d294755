#!/usr/bin/env bash
# H100 session H (issue 19): the profiler and output registries against the real nsys and ncu: one
# profiled gate of four kernels with the Markdown summary and JUnit XML.
#   source .device-env/setup.sh && bash lab/gpu/session_h.sh
set -uo pipefail
R=${OUT:-gpu-results}/h
source lab/gpu/phases.sh
export TRITON_CACHE_DIR=/tmp/perfgate-cache/triton PERFGATE_KERNEL_CACHE=/tmp/perfgate-cache/kernels
phase profiled 300 python3 -m pytest -p no:cacheprovider -q kernels/tests/test_perf.py --perfgate \
  --perfgate-db /tmp/perfgate-h/h.db -k "vector_add or (softmax and bf16) or matmul or rms_norm" \
  --perfgate-profile nsys,ncu --perfgate-report-dir /tmp/perfgate-h/report --perfgate-summary "$R/profiled.md" \
  --perfgate-junit-xml "$R/junit.xml" --perfgate-json "$R/profiled.json"
grep -n "phase took\|gate passed\|gate FAILED" "$R/profiled.log"
grep -n "^### " "$R/profiled.md"
python3 -c "import xml.etree.ElementTree as E,sys; r=E.parse(sys.argv[1]).getroot(); s=r if r.tag=='testsuite' else r[0]; print('junit:', {k: s.get(k) for k in ('tests','failures','skipped','errors')})" "$R/junit.xml"
tar czf "$OUT/h.tgz" -C "$OUT" h && rm -f "$OUT/results.tar"
